//! The only module that imports burn: compute devices now, networks (ARMAC heads, CVPN) and
//! batched device kernels as they arrive. Everything else in the crate reaches it only through
//! small traits (`Policy`), so the game, tree, CFR and evaluation layers build and run
//! without it.

pub mod armac;
pub mod cvpn;
mod device_name;
pub mod onnx;
pub mod pack;
pub mod public;

pub use device_name::DeviceName;

use burn::tensor::Tensor;

/// A compute device (burn's), as the layers above `nn` name it: they hold and pass devices
/// chosen by [`select_device`] without importing burn.
pub type Device = burn::tensor::Device;

/// Errors choosing a compute device.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DeviceError {
    #[error(
        "device `{name}` is not compiled into this binary; rebuild with `--features {feature}`"
    )]
    NotCompiled { name: String, feature: String },
    #[error("device `{0}` is unknown; expected `flex` (CPU), `wgpu` or `cuda`")]
    Unknown(String),
    #[error(
        "cuda was requested but the CUDA driver (libcuda.so.1) cannot be loaded on this machine"
    )]
    NoCudaDriver,
}

/// Names of the backends compiled into this binary, best first.
pub fn compiled_backends() -> Vec<&'static str> {
    let mut v = Vec::new();
    if cfg!(feature = "cuda") {
        v.push("cuda");
    }
    if cfg!(feature = "wgpu") {
        v.push("wgpu");
    }
    if cfg!(feature = "flex") {
        v.push("flex");
    }
    v
}

/// Resolves a device name (`flex`, `wgpu`, `cuda`, or `default` for the best compiled-in one)
/// into a burn device, checking that it is compiled in and, for CUDA, that a driver exists —
/// burn would otherwise panic deep inside on first use.
pub fn select_device(name: &str) -> Result<Device, DeviceError> {
    match name {
        "default" => {
            let best = compiled_backends().first().copied().unwrap_or("flex");
            select_device(best)
        }
        "flex" | "cpu" => {
            #[cfg(feature = "flex")]
            {
                Ok(Device::flex())
            }
            #[cfg(not(feature = "flex"))]
            {
                Err(not_compiled(name, "flex"))
            }
        }
        "wgpu" => {
            #[cfg(feature = "wgpu")]
            {
                Ok(Device::wgpu(burn::tensor::DeviceKind::DefaultDevice))
            }
            #[cfg(not(feature = "wgpu"))]
            {
                Err(not_compiled(name, "wgpu"))
            }
        }
        "cuda" => {
            #[cfg(feature = "cuda")]
            {
                if !cuda_driver_present() {
                    return Err(DeviceError::NoCudaDriver);
                }
                Ok(Device::cuda(0))
            }
            #[cfg(not(feature = "cuda"))]
            {
                Err(not_compiled(name, "cuda"))
            }
        }
        other => Err(DeviceError::Unknown(other.to_string())),
    }
}

/// The error for a backend that this build was compiled without (unused when all are compiled in).
#[cfg_attr(
    all(feature = "flex", feature = "wgpu", feature = "cuda"),
    allow(dead_code)
)]
fn not_compiled(name: &str, feature: &str) -> DeviceError {
    DeviceError::NotCompiled {
        name: name.to_string(),
        feature: feature.to_string(),
    }
}

/// `true` if a CUDA driver library is installed where the loader finds it.
pub fn cuda_driver_present() -> bool {
    let dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/cuda/lib64",
        "/usr/lib/wsl/lib",
    ];
    let in_ld_path = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .any(|d| !d.is_empty() && std::path::Path::new(d).join("libcuda.so.1").exists());
    in_ld_path
        || dirs
            .iter()
            .any(|d| std::path::Path::new(d).join("libcuda.so.1").exists())
}

/// Multiplies two small matrices on `device` and returns the result: a one-call check that a
/// backend works end to end (used by tests and `armac-bench`).
pub fn smoke_test(device: &Device) -> Vec<f32> {
    let a = Tensor::<2>::from_floats([[1.0, 2.0], [3.0, 4.0]], device);
    let b = Tensor::<2>::from_floats([[0.5, -1.0], [2.0, 0.25]], device);
    a.matmul(b)
        .into_data()
        .try_to_vec::<f32>()
        .expect("f32 tensor data")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_cpu_backend_computes() {
        let d = select_device("flex").unwrap();
        assert_eq!(smoke_test(&d), vec![4.5, -0.5, 9.5, -2.0]);
    }

    #[test]
    fn unknown_or_missing_backends_are_errors() {
        assert_eq!(
            select_device("tpu").unwrap_err(),
            DeviceError::Unknown("tpu".into())
        );
        if !cfg!(feature = "cuda") {
            let e = select_device("cuda").unwrap_err().to_string();
            assert!(e.contains("--features cuda"), "{e}");
        }
    }
}
