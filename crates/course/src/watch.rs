//! `cargo xtask watch`: re-run the check on every save, rustlings-style, and move on to the next
//! stage when one passes.
//!
//! One event loop over two sources: file events from `notify` (the current copy only, build output
//! ignored) and keys. On a terminal keys are single key presses (crossterm raw mode, so output lines
//! end in `\r\n`); otherwise each line of stdin is one key, which is how the self-test drives it.
//! The verbs themselves (`check`, `hint`, `predict`, `progress`) do the work.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use notify::{EventKind, RecursiveMode, Watcher};

use crate::args::{Args, Verb};
use crate::check::{self, LearnerOutcome};
use crate::course::{self, Course, Lang, Prediction, Stage};
use crate::guide::Exercise;
use crate::learn;
use crate::learner;
use crate::progress::{self, Progress};

pub const WATCH: Verb = Verb {
    name: "watch",
    about: "Re-check a stage on every save; keys: h hint, l list, r re-run, q quit, a-d predict",
    positionals: "[STAGE]",
    flags: &[(
        "timeout",
        Some("SECS"),
        "seconds a test binary may run before it is stopped (default 60)",
    )],
};

/// Editors save in bursts (temp file, rename, metadata): wait this long for the burst to end.
const SETTLE: Duration = Duration::from_millis(200);

enum Event {
    Changed,
    Key(char),
    WatchError(String),
}

pub fn cmd_watch(args: Args) -> anyhow::Result<ExitCode> {
    args.at_most_positionals(1, "cargo xtask watch [STAGE]")?;
    let course = Course::open(&args)?;
    let lang = Lang::choose(&args)?;
    let timeout = Duration::from_secs(args.number("timeout")?.unwrap_or(60).max(1));
    let progress = Progress::open(&course)?;
    let stage = match args.positional.first() {
        Some(selector) => course.stage(selector)?.clone(),
        None => match course.stages.iter().find(|s| !progress.passed(s)) {
            Some(stage) => stage.clone(),
            None => {
                match lang {
                    Lang::En => println!(
                        "Every stage passes already. `cargo xtask progress` shows the course."
                    ),
                    Lang::ZhCn => {
                        println!("所有阶段都已通过。`cargo xtask progress` 查看全部进度。")
                    }
                }
                return Ok(ExitCode::SUCCESS);
            }
        },
    };

    let (tx, rx) = mpsc::channel();
    let interactive = std::io::stdin().is_terminal();
    let _raw = if interactive {
        Some(RawMode::enable()?)
    } else {
        None
    };
    spawn_keys(tx.clone(), interactive);
    let mut out = Output { raw: interactive };
    let result = watch_loop(&course, stage, lang, timeout, &tx, &rx, &mut out);
    drop(_raw);
    result
}

fn watch_loop(
    course: &Course,
    mut stage: Stage,
    lang: Lang,
    timeout: Duration,
    tx: &Sender<Event>,
    rx: &Receiver<Event>,
    out: &mut Output,
) -> anyhow::Result<ExitCode> {
    let root = Arc::new(Mutex::new(PathBuf::new()));
    let mut watcher = file_watcher(tx.clone(), root.clone())?;
    let mut watched = start_stage(course, &stage, lang, &mut watcher, None, &root, out)?;
    let mut inbox = Inbox {
        rx,
        pending: VecDeque::new(),
    };
    let mut run_check = true;
    loop {
        let predicted = Progress::open(course)?
            .stage(&stage)
            .and_then(|s| s.prediction.clone())
            .is_some();
        if !predicted {
            prompt_prediction(&stage, lang, out)?;
        } else if run_check {
            out.clear_screen();
            let outcome = check::check(course, &stage, lang, timeout, out)?;
            if outcome == LearnerOutcome::Passed {
                match check::next_stage(course, &stage)? {
                    Some(next) => {
                        stage = next.clone();
                        writeln!(out)?;
                        watched = start_stage(
                            course,
                            &stage,
                            lang,
                            &mut watcher,
                            Some(&watched),
                            &root,
                            out,
                        )?;
                        continue;
                    }
                    None => {
                        match lang {
                            Lang::En => writeln!(out, "\nEvery stage passes. Well done.")?,
                            Lang::ZhCn => writeln!(out, "\n所有阶段都已通过。")?,
                        }
                        return Ok(ExitCode::SUCCESS);
                    }
                }
            }
            print_keys(&stage, lang, out)?;
        }
        run_check = false;
        match inbox.next()? {
            Event::Changed => run_check = true,
            Event::WatchError(e) => writeln!(out, "file watcher: {e}")?,
            Event::Key('q') => return Ok(ExitCode::SUCCESS),
            Event::Key('r') => run_check = true,
            Event::Key('h') => {
                writeln!(out)?;
                if let Err(e) = progress::hint(course, &stage, None, lang, out) {
                    writeln!(out, "{e:#}")?;
                }
            }
            Event::Key('l') => {
                writeln!(out)?;
                progress::print_progress(course, lang, out)?;
            }
            Event::Key(c) if !predicted && Prediction::index_of(&c.to_string()).is_some() => {
                writeln!(out)?;
                progress::predict(course, &stage, &c.to_string(), lang, out)?;
                run_check = true;
            }
            Event::Key(_) => print_keys(&stage, lang, out)?,
        }
    }
}

/// Creates the stage's copy when missing, prints its introduction and watches it.
fn start_stage(
    course: &Course,
    stage: &Stage,
    lang: Lang,
    watcher: &mut notify::RecommendedWatcher,
    previous: Option<&Path>,
    root: &Mutex<PathBuf>,
    out: &mut Output,
) -> anyhow::Result<PathBuf> {
    if let Some(previous) = previous {
        watcher.unwatch(previous).ok();
    }
    if !learner::has_copy(course, stage) {
        learn::create_copy(course, stage, Exercise::Repair)?;
        learn::print_intro(course, stage, Exercise::Repair, lang, out)?;
    }
    let dir = learner::copy_dir(course, stage);
    *root.lock().unwrap_or_else(|e| e.into_inner()) = dir.clone();
    watcher
        .watch(&dir, RecursiveMode::Recursive)
        .with_context(|| format!("watching {}", dir.display()))?;
    Ok(dir)
}

fn prompt_prediction(stage: &Stage, lang: Lang, out: &mut Output) -> anyhow::Result<()> {
    let meta = course::load_meta(stage)?;
    learn::print_prediction(&meta, lang, out)?;
    match lang {
        Lang::En => writeln!(
            out,
            "Press a, b, c or d to commit your prediction (h hint · l list · q quit)."
        )?,
        Lang::ZhCn => writeln!(
            out,
            "按 a、b、c 或 d 提交你的预测（h 提示 · l 列表 · q 退出）。"
        )?,
    }
    Ok(())
}

fn print_keys(stage: &Stage, lang: Lang, out: &mut Output) -> anyhow::Result<()> {
    // Without a terminal (an IDE console, a pipe) stdin arrives a line at a time.
    let enter = match (out.raw, lang) {
        (true, _) => "",
        (false, Lang::En) => " (no terminal: type the key, then Enter)",
        (false, Lang::ZhCn) => "（不是终端：输入按键后按回车）",
    };
    match lang {
        Lang::En => writeln!(
            out,
            "\nwatching learn/{}/ · save to re-check · h hint · l list · r re-run · q quit{enter}",
            stage.id
        )?,
        Lang::ZhCn => writeln!(
            out,
            "\n正在监视 learn/{}/ · 保存即重新检查 · h 提示 · l 列表 · r 重新运行 · q 退出{enter}",
            stage.id
        )?,
    }
    out.flush()?;
    Ok(())
}

/// The loop's inbox: file events arriving in one burst count once; keys pressed meanwhile wait.
struct Inbox<'a> {
    rx: &'a Receiver<Event>,
    pending: VecDeque<Event>,
}

impl Inbox<'_> {
    fn next(&mut self) -> anyhow::Result<Event> {
        let event = match self.pending.pop_front() {
            Some(event) => event,
            None => self
                .rx
                .recv()
                .context("every event source of the watch loop has stopped")?,
        };
        if matches!(event, Event::Changed) {
            loop {
                match self.rx.recv_timeout(SETTLE) {
                    Ok(Event::Changed) => continue,
                    Ok(other) => self.pending.push_back(other),
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            }
        }
        Ok(event)
    }
}

fn file_watcher(
    tx: Sender<Event>,
    root: Arc<Mutex<PathBuf>>,
) -> anyhow::Result<notify::RecommendedWatcher> {
    let watcher = notify::recommended_watcher(move |result: notify::Result<notify::Event>| {
        let event = match result {
            Ok(event) => event,
            Err(e) => {
                tx.send(Event::WatchError(e.to_string())).ok();
                return;
            }
        };
        // Reads (by the check itself, by cargo) are not edits; build output is not source.
        let edit = matches!(
            event.kind,
            EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
        );
        let root = root.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let source = event.paths.iter().any(|p| is_source(p, &root));
        if edit && source {
            tx.send(Event::Changed).ok();
        }
    })
    .context("starting the file watcher")?;
    Ok(watcher)
}

/// Whether a changed path is the learner's source: inside the watched copy and not under its own
/// `target/`. Only the part below the copy counts, so a course that itself lives under a directory
/// named `target` (as the tests' sandboxes do) is still watched.
fn is_source(path: &Path, root: &Path) -> bool {
    path.strip_prefix(root)
        .is_ok_and(|rel| !rel.components().any(|c| c.as_os_str() == "target"))
}

/// Keys from the terminal (raw mode) or, without one, one key per line of stdin.
fn spawn_keys(tx: Sender<Event>, interactive: bool) {
    std::thread::spawn(move || {
        if interactive {
            use crossterm::event::{self, KeyCode, KeyEventKind, KeyModifiers};
            while let Ok(event) = event::read() {
                let event::Event::Key(key) = event else {
                    continue;
                };
                if key.kind != KeyEventKind::Press {
                    continue;
                }
                let c = match key.code {
                    KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => 'q',
                    KeyCode::Char(c) => c.to_ascii_lowercase(),
                    KeyCode::Esc => 'q',
                    KeyCode::Enter => 'r',
                    _ => continue,
                };
                if tx.send(Event::Key(c)).is_err() {
                    break;
                }
            }
        } else {
            let stdin = std::io::stdin();
            let mut line = String::new();
            // At end of input (stdin closed or /dev/null) keys stop; file events go on.
            while stdin.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Some(c) = line.trim().chars().next()
                    && tx.send(Event::Key(c.to_ascii_lowercase())).is_err()
                {
                    break;
                }
                line.clear();
            }
        }
    });
}

/// Raw mode for the life of the watch, restored on drop (also on errors).
struct RawMode;

impl RawMode {
    fn enable() -> anyhow::Result<RawMode> {
        crossterm::terminal::enable_raw_mode().context("switching the terminal to raw mode")?;
        Ok(RawMode)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        crossterm::terminal::disable_raw_mode().ok();
    }
}

/// Stdout that ends lines with `\r\n` in raw mode (the terminal no longer adds the `\r`).
struct Output {
    raw: bool,
}

impl Output {
    fn clear_screen(&mut self) {
        if self.raw {
            crossterm::execute!(
                std::io::stdout(),
                crossterm::terminal::Clear(crossterm::terminal::ClearType::All),
                crossterm::cursor::MoveTo(0, 0)
            )
            .ok();
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut stdout = std::io::stdout().lock();
        if self.raw {
            for chunk in buf.split_inclusive(|b| *b == b'\n') {
                match chunk.strip_suffix(b"\n") {
                    Some(line) => {
                        stdout.write_all(line)?;
                        stdout.write_all(b"\r\n")?;
                    }
                    None => stdout.write_all(chunk)?,
                }
            }
        } else {
            stdout.write_all(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::is_source;
    use std::path::Path;

    #[test]
    fn only_paths_below_the_copy_and_outside_its_target_are_sources() {
        let root = Path::new("/work/target/tmp/course/learn/01-holds");
        assert!(is_source(&root.join("src/calc.rs"), root));
        assert!(is_source(&root.join("tests/transfer.rs"), root));
        assert!(!is_source(&root.join("target/debug/x"), root));
        assert!(!is_source(
            Path::new("/work/target/tmp/course/learn/02-x/src/a.rs"),
            root
        ));
    }
}
