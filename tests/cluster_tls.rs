//! ARMAC with remote actors through a Redis server that speaks TLS: learner and actors train
//! with a private certificate authority, and certificates they cannot check are refused.
//!
//! The test starts its own `redis-server` (and makes its certificates with `openssl`) and
//! skips, saying why, when either is missing or the server has no TLS.

#[path = "common/broker.rs"]
mod broker;
mod common;

use broker::*;
use common::{KUHN_ARMAC_CI as KUHN, UNIFORM_KUHN_NASH_CONV, nash_convs};
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `openssl` with `args` in `dir`; false (after printing why) when it is missing or fails.
fn openssl(dir: &Path, args: &[&str]) -> bool {
    match Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            eprintln!(
                "openssl {args:?} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            false
        }
        Err(e) => {
            eprintln!("openssl is not available: {e}");
            false
        }
    }
}

/// A private CA (`ca.pem`), and a server certificate for 127.0.0.1 signed by it
/// (`server.pem`, `server.key`), plus an unrelated CA (`other.pem`), written into `dir`.
fn make_certificates(dir: &Path) -> bool {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    let ca = |name: &str, cn: &str| {
        let mut a = vec!["req", "-x509"];
        a.extend(ec);
        let (key, pem, subj) = (
            format!("{name}.key"),
            format!("{name}.pem"),
            format!("/CN={cn}"),
        );
        a.extend(["-keyout", &key, "-out", &pem, "-days", "2", "-subj", &subj]);
        openssl(dir, &a)
    };
    let mut csr = vec!["req"];
    csr.extend(ec);
    csr.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    ca("ca", "armac test CA")
        && ca("other", "some other CA")
        && openssl(dir, &csr)
        && openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.pem",
                "-days",
                "2",
                "-extfile",
                "ext.cnf",
            ],
        )
}

#[test]
fn a_tls_broker_trains_with_a_private_ca_and_refuses_certificates_it_cannot_check() {
    if Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipping the TLS test: redis-server is not installed");
        return;
    }
    let certs = common::tmp("redis", "tls-certs");
    std::fs::create_dir_all(&certs).unwrap();
    if !make_certificates(&certs) {
        eprintln!("skipping the TLS test: could not make certificates with openssl");
        return;
    }
    let dir = common::tmp("redis", "tls");
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let path = |f: &str| certs.join(f).to_string_lossy().into_owned();
    // TLS only: the plain port is off.
    let extra: Vec<String> = [
        "--port",
        "0",
        "--tls-port",
        &port.to_string(),
        "--tls-cert-file",
        &path("server.pem"),
        "--tls-key-file",
        &path("server.key"),
        "--tls-ca-cert-file",
        &path("ca.pem"),
        "--tls-auth-clients",
        "no",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Started by hand (not `Redis::spawn`) to tell a redis-server built without TLS, which
    // refuses the directives and exits, from one that fails otherwise.
    let log = dir.join("redis.log");
    let mut child = Command::new("redis-server")
        .args([
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
        ])
        .arg(&dir)
        .args(&extra)
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server starts");
    if !wait_listening(port, || child.try_wait().unwrap().is_some()) {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("Bad directive") {
            eprintln!("skipping the TLS test: this redis-server has no TLS support");
            return;
        }
        panic!("redis-server with TLS exited: {text}");
    }
    let redis = Redis {
        child,
        port,
        dir: dir.clone(),
        extra,
    };
    let url = format!("rediss://127.0.0.1:{}/0", redis.port);

    // The system roots do not know the private CA, nor does another CA: the handshake fails
    // and the error says what to set.
    for ca in [None, Some(path("other.pem"))] {
        let mut cmd = actor();
        cmd.args(["--run", "x", "--broker", &url]);
        match ca {
            Some(ca) => cmd.env("ARMAC_REDIS_CA_CERT", ca),
            None => cmd.env_remove("ARMAC_REDIS_CA_CERT"),
        };
        common::run_err(&mut cmd, "TLS handshake failed");
    }
    // A CA file that is missing, or not PEM: named.
    common::run_err(
        actor()
            .args(["--run", "x", "--broker", &url])
            .env("ARMAC_REDIS_CA_CERT", path("nowhere.pem")),
        "ARMAC_REDIS_CA_CERT = `",
    );
    common::run_err(
        actor()
            .args(["--run", "x", "--broker", &url])
            .env("ARMAC_REDIS_CA_CERT", path("ext.cnf")),
        "not a PEM file",
    );
    // A client certificate without its key.
    common::run_err(
        actor()
            .args(["--run", "x", "--broker", &url])
            .env("ARMAC_REDIS_CA_CERT", path("ca.pem"))
            .env("ARMAC_REDIS_CLIENT_CERT", path("server.pem"))
            .env_remove("ARMAC_REDIS_CLIENT_KEY"),
        "set both or neither",
    );

    // With the private CA: a learner and an actor train Kuhn over TLS.
    let run = common::tmp("cluster", "tls-run");
    let learner = common::train()
        .args(KUHN)
        .args(["--set", "armac.epochs=20", "--set", "eval.every=20"])
        .args(["--role", "learner", "--broker", &url])
        .args(["--set", "cluster.run=\"tls\"", "--out"])
        .arg(&run)
        .env("ARMAC_REDIS_CA_CERT", path("ca.pem"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let a = actor()
        .args(["--run", "tls", "--broker", &url, "--wait", "60"])
        .env("ARMAC_REDIS_CA_CERT", path("ca.pem"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert_success(&learner.wait_with_output().unwrap(), "learner over TLS");
    assert_success(&a.wait_with_output().unwrap(), "actor over TLS");
    let s = common::json(&run.join("summary.json"));
    assert_eq!(s["iterations"], 20);
    let curve = nash_convs(&run);
    assert_eq!(curve.len(), 1, "{curve:?}");
    assert!(
        curve[0].1 < 0.5 * UNIFORM_KUHN_NASH_CONV,
        "NashConv {} after 20 epochs over TLS",
        curve[0].1
    );
    drop(redis);
    std::fs::remove_dir_all(&run).ok();
    std::fs::remove_dir_all(&certs).ok();
}
