//! `armac-eval serve`'s page itself in headless Chromium (skipped with a message when
//! /usr/bin/chromium is missing; CI installs it). `ARMAC_WRITE_SCREENSHOT=1` also writes the
//! test's screenshot to docs/serve.png (the README's picture).

mod common;
#[path = "common/http.rs"]
mod http;

use common::serve;
use http::{HUNL, LEDUC};
use serde_json::Value;
use std::io::{BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `chromium` with `args` (headless, no network of its own), killed after 90 s; its stdout.
fn chromium(args: &[String]) -> String {
    let profile = common::tmp("serve", &format!("chromium-{}", args.len()));
    let mut child = Command::new("/usr/bin/chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--virtual-time-budget=30000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium ran over 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::fs::remove_dir_all(&profile);
    reader.join().unwrap()
}

/// The page's own report of `?autotest=1` from the dumped DOM.
fn autotest_report(dom: &str) -> Value {
    let start = dom
        .find("<pre id=\"autotest-result\"")
        .unwrap_or_else(|| panic!("no report element; DOM:\n{dom}"));
    let rest = &dom[start..];
    let tag_end = rest.find('>').unwrap();
    assert!(
        rest[..tag_end].contains("data-done=\"1\""),
        "the autotest did not finish; DOM:\n{dom}"
    );
    let text = &rest[tag_end + 1..rest.find("</pre>").unwrap()];
    serde_json::from_str(
        &text
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">"),
    )
    .unwrap_or_else(|e| panic!("bad report ({e}): {text}"))
}

#[test]
fn the_page_plays_a_hand_in_a_headless_browser() {
    if !Path::new("/usr/bin/chromium").exists() {
        println!("SKIPPED: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    }
    let s = serve(&["--policy", HUNL, "--policy", LEDUC]);
    let url = |q: &str| format!("http://{}/?{q}", s.addr);
    let dom = chromium(&["--dump-dom".into(), url("autotest=1")]);
    let r = autotest_report(&dom);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["model"], HUNL);
    assert_eq!(r["chart_cells"], 169);
    assert_eq!(
        r["chart_coloured"], 169,
        "every cell has its action colours"
    );
    assert_eq!(r["hand_over"], true);
    assert!(
        r["moves"].as_u64().unwrap() >= 1,
        "the page made the person's moves: {r}"
    );
    assert!(r["events"].as_u64().unwrap() >= 2, "{r}");
    let hands = r["hands"].as_u64().unwrap();
    assert!(
        r["result"]
            .as_str()
            .unwrap()
            .contains(&format!("{hands} hand(s)")),
        "{r}"
    );
    assert_eq!(
        r["model_cards"].as_str().unwrap().split(' ').count(),
        2,
        "{r}"
    );
    // What the person saw at the first decision: the game's own pot, poker's button names,
    // two named cards.
    let pot = r["first_pot"].as_str().unwrap();
    assert!(
        r["first_infostate"]
            .as_str()
            .unwrap()
            .contains(&format!("[Pot: {pot}]")),
        "{r}"
    );
    let buttons: Vec<&str> = r["first_buttons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert!(
        buttons
            .iter()
            .all(|b| ["Fold", "Check", "Call", "Pot", "All-in"].contains(b)),
        "{r}"
    );
    assert!(
        buttons.is_empty() || buttons.contains(&"Check") != buttons.contains(&"Call"),
        "{r}"
    );
    let cards: Vec<&str> = r["first_cards"].as_str().unwrap().split(' ').collect();
    assert!(
        cards.len() == 2 && cards.iter().all(|c| c.len() == 2),
        "{r}"
    );
    let leduc = autotest_report(&chromium(&["--dump-dom".into(), url("model=1&autotest=1")]));
    assert_eq!(leduc["ok"], true, "{leduc}");
    assert!(
        ["J", "Q", "K"].contains(&leduc["first_cards"].as_str().unwrap()),
        "{leduc}"
    );
    let table_cards = leduc["table_cards"].as_array().unwrap();
    assert_eq!(table_cards.len(), 100);
    assert!(
        table_cards
            .iter()
            .all(|c| ["J", "Q", "K"].contains(&&c.as_str().unwrap()[..1])),
        "{leduc}"
    );
    assert_eq!(leduc["table_total"], 936);
    assert_eq!(leduc["table_rows"], 100);
    assert!(leduc["moves"].as_u64().unwrap() >= 1, "{leduc}");
    // The screenshot: a real picture of the chart, not a blank page.
    let dir = common::tmp("serve", "shot");
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("serve.png");
    chromium(&[
        format!("--screenshot={}", png.display()),
        "--window-size=1360,900".into(),
        url("autotest=1"),
    ]);
    let decoder = png::Decoder::new(BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1360, 900));
    let channels = info.line_size / info.width as usize;
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let mut colours: Vec<[u8; 3]> = pixels.iter().map(|p| [p[0], p[1], p[2]]).collect();
    let coloured = colours
        .iter()
        .filter(|c| c.iter().max().unwrap() - c.iter().min().unwrap() > 60)
        .count();
    colours.sort_unstable();
    colours.dedup();
    assert!(
        colours.len() > 200,
        "{} distinct colours: a blank page",
        colours.len()
    );
    assert!(
        coloured > pixels.len() / 20,
        "only {coloured} of {} pixels are coloured: the chart did not render",
        pixels.len()
    );
    if std::env::var_os("ARMAC_WRITE_SCREENSHOT").is_some() {
        std::fs::copy(
            &png,
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/serve.png"),
        )
        .unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
