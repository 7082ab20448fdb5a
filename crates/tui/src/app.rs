//! The app loop: terminal events and connection events in, model updates, frames out, one
//! redraw per batch of events.

use std::io::Stdout;
use std::time::Duration;

use crossterm::event::{Event, EventStream};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};
use types::ClientFrame;

use crate::args::Target;
use crate::error::TuiError;
use crate::model::App;
use crate::net::{self, NetConfig};
use crate::terminal::TerminalGuard;
use crate::view;

/// At most this many queued events are applied before the screen is redrawn.
const BATCH: usize = 256;

/// Runs the client until the user quits; the terminal is restored whatever happens.
pub async fn run(target: Target) -> Result<(), TuiError> {
    let mut guard = TerminalGuard::enter()?;
    let result = run_loop(&mut guard.terminal, target).await;
    drop(guard);
    result
}

async fn run_loop(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    target: Target,
) -> Result<(), TuiError> {
    let mut app = App::new(
        target.user.clone(),
        target.session.clone(),
        target.model.clone(),
    );
    let (resume_tx, resume_rx) = watch::channel(app.resume());
    let (out_tx, out_rx) = mpsc::channel::<ClientFrame>(64);
    let (event_tx, mut event_rx) = mpsc::channel(1024);
    app.arm_delay = target.approval_arm_delay;
    app.continue_last = target.continue_last;
    let mut config = NetConfig::new(target.url, target.user, target.token);
    config.source = target.source;
    let net = net::spawn(config, resume_rx, out_rx, event_tx);

    let mut input = EventStream::new();
    let mut terminate = signal(SignalKind::terminate()).map_err(TuiError::Terminal)?;
    let mut hangup = signal(SignalKind::hangup()).map_err(TuiError::Terminal)?;
    let mut net_open = true;
    draw(terminal, &mut app)?;
    loop {
        let mut outgoing = Vec::new();
        tokio::select! {
            event = input.next() => match event {
                Some(Ok(Event::Key(key))) => outgoing.extend(app.on_key(key)),
                Some(Ok(Event::Paste(text))) => app.on_paste(&text),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(TuiError::Terminal(e)),
                None => break,
            },
            event = event_rx.recv(), if net_open => match event {
                Some(event) => {
                    outgoing.extend(app.on_conn(event));
                    for _ in 0..BATCH {
                        let Ok(event) = event_rx.try_recv() else { break };
                        outgoing.extend(app.on_conn(event));
                    }
                }
                None => net_open = false,
            },
            _ = terminate.recv() => break,
            _ = hangup.recv() => break,
        }
        for frame in outgoing {
            // Fails only once the network task has ended (sign-in refused): nothing to do.
            let _ = out_tx.send(frame).await;
        }
        if let Some(file) = app.take_export() {
            let written = write_new(&file.path, &file.text);
            app.exported(&file, written);
        }
        let resume = app.resume();
        resume_tx.send_if_modified(|current| {
            let changed = *current != resume;
            *current = resume;
            changed
        });
        if app.quit {
            break;
        }
        draw(terminal, &mut app)?;
    }
    drop(out_tx);
    if tokio::time::timeout(Duration::from_secs(1), net)
        .await
        .is_err()
    {
        // The socket did not close in time; the process is ending anyway.
    }
    Ok(())
}

fn draw(terminal: &mut Terminal<CrosstermBackend<Stdout>>, app: &mut App) -> Result<(), TuiError> {
    let mut drawn = None;
    terminal
        .draw(|frame| drawn = Some(view::draw(frame, app)))
        .map_err(TuiError::Terminal)?;
    if let Some(drawn) = drawn {
        app.set_layout(drawn.page, drawn.max_scroll, drawn.scroll);
    }
    Ok(())
}

/// Writes `text` to a new file at `path` (readable by its owner only: it is a conversation); an
/// existing file is left alone.
fn write_new(path: &std::path::Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                "a file is already there: give another path (/export md <path>)".to_owned()
            }
            _ => e.to_string(),
        })?;
    file.write_all(text.as_bytes()).map_err(|e| e.to_string())
}
