//! Reads are bounded by length before content: a file of a model grown far past the length
//! its manifest records, and a manifest grown past the manifest's cap, are refused from their
//! length alone (sparse files of 100 GiB and 1 GiB, which take no disk), quickly and naming
//! the file. The command runs under a 4 GB address space (`ulimit -v`), so that a reader that
//! did read them fails an allocation instead of taking the machine's memory.

mod common;
#[path = "common/hostile.rs"]
#[allow(dead_code)]
mod damage;

use common::tmp;
use damage::{copy_dir, refused};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn files_grown_past_their_recorded_length_are_refused_unread() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/leduc_armac");
    let dir = tmp("hostile-reads", "model");
    copy_dir(&src, &dir);
    let listed: Vec<String> = common::json(&dir.join("manifest.json"))["files"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let victim = dir.join(listed.iter().find(|r| !r.contains('/')).unwrap());
    let d = dir.display().to_string();
    #[rustfmt::skip]
    let cases: [(&str, &Path, u64, &[&str]); 2] = [
        ("a listed file grown to 100 GiB", &victim, 100 << 30, &["107374182400 bytes, the manifest records"]),
        ("a manifest grown to 1 GiB", &dir.join("manifest.json"), 1 << 30, &["manifest.json", "has 1073741824 bytes, more than the 16777216"]),
    ];
    for (case, path, len, needles) in cases {
        let good = std::fs::read(path).unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        file.set_len(len).unwrap();
        drop(file);
        let mut cmd = Command::new("sh");
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["-c", "ulimit -v 4000000 && exec timeout 60 \"$0\" \"$@\""])
            .arg(env!("CARGO_BIN_EXE_armac-eval"))
            .args(["nashconv", "--game", "leduc_poker", "--policy", &d]);
        let t = Instant::now();
        let name = path.file_name().unwrap().to_str().unwrap();
        let mut all = vec![name];
        all.extend_from_slice(needles);
        refused(&mut cmd, &all, case);
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{case}: {:?}",
            t.elapsed()
        );
        assert_eq!(
            std::fs::metadata(path).unwrap().len(),
            len,
            "{case}: changed"
        );
        std::fs::write(path, good).unwrap();
    }
    common::run_ok(common::eval().args(["nashconv", "--game", "leduc_poker", "--policy", &d]));
    let _ = std::fs::remove_dir_all(&dir);
}
