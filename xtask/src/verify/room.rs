//! `cargo xtask fault NN --room`: the fault shown to a class from a projector — one screen at a time, each on a
//! key press: the failing test's output (what the class sees first), the contract (which test must fail with
//! which message, which must still pass), then the diagnosis one step per screen, and the repair last with
//! `--show-repair`. On a terminal a key is a single key press (`q` quits); without one, each line of stdin is a
//! key and at its end every screen is shown in order.

use std::io::{IsTerminal, Write};

use forge_course::course::Contract;

/// What the room sees, in order.
pub struct Screens {
    pub stage: String,
    pub title: String,
    pub output: String,
    pub show_repair: bool,
}

/// Shows the screens; returns when the last was shown or `q` was pressed.
pub fn present(screens: &Screens, contract: &Contract, out: &mut dyn Write) -> anyhow::Result<()> {
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let pages = pages(screens, contract);
    for (i, page) in pages.iter().enumerate() {
        if interactive {
            crossterm::execute!(
                std::io::stdout(),
                crossterm::terminal::Clear(crossterm::terminal::ClearType::All),
                crossterm::cursor::MoveTo(0, 0)
            )
            .ok();
        }
        writeln!(
            out,
            "━━ stage {} — {} ━━ [{}/{}]\n",
            screens.stage,
            screens.title,
            i + 1,
            pages.len()
        )?;
        writeln!(out, "{page}")?;
        if i + 1 < pages.len() {
            writeln!(out, "\n[any key: next · q: quit]")?;
            out.flush()?;
            if next_key(interactive) == Some('q') {
                break;
            }
        }
    }
    Ok(())
}

fn pages(screens: &Screens, contract: &Contract) -> Vec<String> {
    let mut pages = Vec::new();
    let mut failing = format!(
        "WHAT FAILS — `{}`, with the fault in place:\n\n",
        contract.target_test
    );
    for line in screens.output.lines().take(40) {
        failing.push_str(&format!("  | {line}\n"));
    }
    failing.push_str("\nAsk the room: what is the code doing, and what should it do?");
    pages.push(failing);
    let mut still = String::new();
    for name in &contract.must_still_pass {
        still.push_str(&format!("  ✓ {name}\n"));
    }
    pages.push(format!(
        "THE CONTRACT (fixtures/failure.json)\n\n  fault `{}`: {} swapped in for {}\n  must fail: {}\n    \
         with: \"{}\"\n  must still pass:\n{still}\nOnly one behaviour broke: where in {} would you look first?",
        contract.fault_id,
        contract.fault_file,
        contract.faulty_source_path,
        contract.target_test,
        contract.expected_failure_excerpt,
        contract.faulty_source_path
    ));
    let steps = contract.diagnosis.len();
    for (i, step) in contract.diagnosis.iter().enumerate() {
        pages.push(format!("DIAGNOSIS, step {} of {steps}\n\n  {step}", i + 1));
    }
    if screens.show_repair {
        pages.push(format!("THE REPAIR\n\n  {}", contract.repair));
    }
    pages
}

/// One key: a single key press on a terminal, else the first character of a line of stdin (`None` at its end).
fn next_key(interactive: bool) -> Option<char> {
    if interactive {
        use crossterm::event::{self, KeyCode, KeyEventKind, KeyModifiers};
        crossterm::terminal::enable_raw_mode().ok()?;
        let key = loop {
            match event::read() {
                Ok(event::Event::Key(k)) if k.kind == KeyEventKind::Press => {
                    break match k.code {
                        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => 'q',
                        KeyCode::Char(c) => c.to_ascii_lowercase(),
                        KeyCode::Esc => 'q',
                        _ => ' ',
                    };
                }
                Ok(_) => continue,
                Err(_) => break 'q',
            }
        };
        crossterm::terminal::disable_raw_mode().ok();
        Some(key)
    } else {
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(
                line.trim()
                    .chars()
                    .next()
                    .unwrap_or(' ')
                    .to_ascii_lowercase(),
            ),
        }
    }
}
