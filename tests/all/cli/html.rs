//! `--html`: the report a fixture bug writes, opened in headless Chromium
//! (Debian's `chromium`, installed by scripts/setup.sh): the page's script
//! runs without errors and finds one lane per thread and one row per step,
//! and a screenshot of it is not blank. One browser run per test, one
//! browser at a time, with generous timeouts: CI machines have two cores.
//! Without a browser the checks that need one are skipped, saying so on
//! stderr, unless `$WASMRACE_REQUIRE_CHROMIUM` is set (.ci/run sets it),
//! which makes a missing browser a failure.

use super::{expect, fixture, wasmrace, TempDir};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One browser at a time: two Chromiums on two cores slow each other past
/// any sensible timeout.
static BROWSER: Mutex<()> = Mutex::new(());

/// How long one browser run may take before the test fails.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(180);

/// The Chromium binary: `$WASMRACE_CHROMIUM`, else Debian's; `None`
/// (after saying so) when there is none and none is required.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("WASMRACE_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if path.is_file() {
        return Some(path);
    }
    let missing = format!(
        "{} not found: run scripts/setup.sh (it installs Debian's `chromium`, \
         about 350 MB) or set WASMRACE_CHROMIUM",
        path.display()
    );
    assert!(
        std::env::var_os("WASMRACE_REQUIRE_CHROMIUM").is_none(),
        "{missing} (WASMRACE_REQUIRE_CHROMIUM is set, so this is a failure)"
    );
    // Straight to stderr, not eprintln!: libtest would capture that and
    // show it only for a failing test.
    let _ = writeln!(
        std::io::stderr(),
        "skipping the browser checks of the HTML report: {missing}"
    );
    None
}

/// Runs headless Chromium on `page` with `args` added, in a fresh profile,
/// and returns its stdout; `None` when there is no browser to run.
fn browse(dir: &Path, page: &Path, args: &[String]) -> Option<String> {
    let chromium = chromium()?;
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let profile = dir.join("chromium-profile");
    std::fs::create_dir_all(&profile).unwrap();
    let out_path = dir.join("chromium.out");
    let err_path = dir.join("chromium.err");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        // Files, not pipes: a full pipe would stall the browser while we
        // only poll it.
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("cannot start chromium");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium took more than {BROWSER_TIMEOUT:?}; stderr: {}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout = std::fs::read_to_string(&out_path).unwrap();
    assert!(
        status.success(),
        "chromium failed ({status}): {}",
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    Some(stdout)
}

/// Writes the HTML report of `lost_update`'s bug and returns its path with
/// the threads and steps of the interleaving (from `--json`).
fn lost_update_report(dir: &Path) -> (PathBuf, usize, usize) {
    let m = fixture(dir, "lost_update");
    let run = wasmrace(
        dir,
        &[
            "check",
            &m,
            "--test",
            "lost_update",
            "--json",
            "--html",
            "report.html",
        ],
    );
    expect(&run, 1);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let trace = json["tests"][0]["bug"]["trace"].as_array().unwrap();
    let mut threads: Vec<&str> = trace
        .iter()
        .map(|e| e["thread"].as_str().unwrap())
        .collect();
    threads.sort();
    threads.dedup();
    (dir.join("report.html"), threads.len(), trace.len())
}

/// The value of attribute `name` in the first `<body ...>` tag of `dom`.
fn body_attribute<'a>(dom: &'a str, name: &str) -> &'a str {
    let body = &dom[dom.find("<body").expect("no body in the dump")..];
    let tag = &body[..body.find('>').unwrap()];
    let key = format!(" {name}=\"");
    let at = tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        + key.len();
    &tag[at..at + tag[at..].find('"').unwrap()]
}

#[test]
fn html_report_has_a_lane_per_thread_and_a_row_per_step_in_chromium() {
    let dir = TempDir::new("html-dom");
    let (page, threads, steps) = lost_update_report(&dir);
    assert_eq!((threads, steps), (3, 12), "lost_update's shrunk bug");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://") && !html.contains(" src="),
        "the page is self-contained"
    );
    let Some(dom) = browse(&dir, &page, &["--dump-dom".to_string()]) else {
        return;
    };
    // The page's script ran to its end and counted what it found.
    assert_eq!(body_attribute(&dom, "data-ready"), "1", "{dom}");
    assert_eq!(body_attribute(&dom, "data-errors"), "0", "{dom}");
    assert_eq!(body_attribute(&dom, "data-lanes"), threads.to_string());
    assert_eq!(body_attribute(&dom, "data-rows"), steps.to_string());
    assert_eq!(body_attribute(&dom, "data-steps"), steps.to_string());
    // It selected the failing step and filled the panel from the data.
    assert!(dom.contains("step 12 of 12"), "{dom}");
    assert!(dom.contains("objects up to this step"), "{dom}");
    assert!(dom.contains("lost_update/src/lib.rs:32:19"));
}

/// Size of a 1200x800 screenshot of an empty page, in bytes, as measured
/// with Debian's chromium 156 (4,514: one colour compresses to nothing);
/// the report's is about 110 KB.
const BLANK_PNG_BYTES: u64 = 4_514;

#[test]
fn html_report_screenshot_is_not_blank() {
    let dir = TempDir::new("html-shot");
    let (page, _, _) = lost_update_report(&dir);
    let shot = dir.join("report.png");
    let args = [
        format!("--screenshot={}", shot.display()),
        "--window-size=1200,800".to_string(),
    ];
    if browse(&dir, &page, &args).is_none() {
        return;
    }
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a png");
    // IHDR: width and height, big-endian, right after the chunk header.
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1200, 800));
    // Drawn text, lanes and colours do not compress like one colour does.
    assert!(
        png.len() as u64 > 5 * BLANK_PNG_BYTES,
        "screenshot of {} bytes looks blank (an empty page gives about {BLANK_PNG_BYTES})",
        png.len()
    );
}

/// Clicking a step (through the page's `#step=N` address, which clicks row
/// N) shows every object's state at that step: in `lazy01`'s bug, the row
/// where a worker takes the mutex shows it as that worker's, and the cell
/// still at its initial value; each row shows the state of what it touched.
#[test]
fn clicking_a_step_shows_the_objects_state_at_that_step_in_chromium() {
    let dir = TempDir::new("html-state");
    let m = fixture(&dir, "lazy01");
    let run = wasmrace(
        &dir,
        &[
            "check",
            &m,
            "--test",
            "lazy01",
            "--json",
            "--html",
            "report.html",
        ],
    );
    expect(&run, 1);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let trace = json["tests"][0]["bug"]["trace"].as_array().unwrap();
    let lock = trace
        .iter()
        .position(|e| e["op"] == "mutex.lock")
        .expect("a worker locks");
    let holder = trace[lock]["thread"].as_str().unwrap();
    // The trace records the mutex's state after the lock.
    let held = format!("held by {holder}; waiting: ");
    assert_eq!(trace[lock]["state"][0]["object"], "mutex main#1");
    let value = trace[lock]["state"][0]["value"].as_str().unwrap();
    assert!(value.starts_with(&held), "{value}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains(&format!(
        "<span class=\"obj\">mutex main#1</span>: {value}</div>"
    )));
    let page = dir.join(format!("report.html#step={}", lock + 1));
    let Some(dom) = browse(&dir, &page, &["--dump-dom".to_string()]) else {
        return;
    };
    assert_eq!(body_attribute(&dom, "data-errors"), "0", "{dom}");
    assert_eq!(body_attribute(&dom, "data-ready"), "1", "{dom}");
    let panel = &dom[dom.find("<aside id=\"panel\"").expect("the panel")..];
    let panel = &panel[..panel.find("</aside>").unwrap()];
    assert!(
        panel.contains(&format!("step {} of {}", lock + 1, trace.len())),
        "the clicked step, not the failing one: {panel}"
    );
    assert!(
        panel.contains(&format!("<td>mutex main#1</td><td class=\"value\">{held}")),
        "{panel}"
    );
    assert!(
        panel.contains("<td>cell main#0</td><td class=\"value\">value = 0</td>"),
        "{panel}"
    );
}
