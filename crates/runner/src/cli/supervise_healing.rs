//! The supervisor's healing: the workspace put back before each launch and every few seconds
//! while the guests run (see [`runner::heal`]), what an exited guest left in its cgroup ended,
//! a shell whose socket is gone restarted, and the advice a give-up ends with.

use anyhow::Result;
use sandbox::Role;
use types::CancellationToken;

use super::Supervisor;
use crate::guest;
use crate::out::say;

/// Repairs kept in the runner marker.
const REPAIRS_KEPT: usize = 20;

impl Supervisor {
    /// Puts back what the runner owns in the workspace before a launch (see [`runner::heal`]).
    pub(super) fn heal(&mut self) {
        self.heal_on(runner::Occasion::Launch(self.plan.separation));
    }

    /// [`Self::heal`] before a guest's relaunch, writing the marker at once when something was
    /// repaired: `runner status` names a repair from when it is made, not only once the
    /// restarted guest is ready (which a client can see a moment before the supervisor does).
    pub(super) fn heal_for_restart(&mut self) -> Result<()> {
        self.heal_and_record(runner::Occasion::Launch(self.plan.separation))
    }

    /// Heals on `occasion` and writes the marker if that repaired anything.
    fn heal_and_record(&mut self, occasion: runner::Occasion) -> Result<()> {
        let before = self.repairs.clone();
        self.heal_on(occasion);
        if self.repairs != before {
            self.write_marker()?;
        }
        Ok(())
    }

    /// Heals the workspace, saying what it repaired; a failure is remembered for the give-up
    /// message, not fatal (a launch then says what is wrong).
    fn heal_on(&mut self, occasion: runner::Occasion) {
        let user = self.plan.user.id.clone();
        match runner::heal(&self.plan.ws, occasion) {
            Ok(repairs) => {
                self.unrepaired = None;
                for what in repairs {
                    tracing::warn!(%user, "repaired: {what}");
                    say(format!("{user}: repaired: {what}"));
                    self.repairs.push(format!("{} {what}", crate::out::now()));
                }
                let extra = self.repairs.len().saturating_sub(REPAIRS_KEPT);
                self.repairs.drain(..extra);
            }
            Err(e) => {
                tracing::error!(%user, "could not repair the workspace: {e:#}");
                self.unrepaired = Some(format!("{e:#}"));
            }
        }
    }

    /// While both guests run: heals the workspace (a `chmod 0` of `shared/` would otherwise stop
    /// every command until the next restart), and restarts a shell whose socket the shell
    /// removed or replaced (no client could reach it again).
    pub(super) async fn check(&mut self, stop: &CancellationToken) -> Result<()> {
        self.heal_and_record(runner::Occasion::WhileRunning)?;
        let socket = types::shell_socket_path(&self.plan.ws);
        let is_socket = std::fs::symlink_metadata(&socket)
            .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()));
        if !is_socket {
            let what = "its socket was removed";
            tracing::warn!(user = %self.plan.user.id, "shell-vm: {what}; restarting it");
            self.restart(Role::ShellVm, what, stop).await?;
        }
        Ok(())
    }

    /// Ends what `role` left running (process tier: its cgroup).
    pub(super) fn end_strays(&self, role: Role) {
        if let Some(cgroup) = self.tracking.cgroup() {
            let n = cgroup.kill(Some(role.name()));
            if n > 0 {
                tracing::warn!(%role, "ended {n} processes the exited guest left running");
            }
        }
    }

    /// What a give-up message says after the restarts: the cause as far as it is known, and how
    /// to go on.
    pub(super) fn give_up_advice(&self, role: Role, cause: &Option<String>) -> String {
        let user = &self.plan.user.id;
        let log = guest::log_path(&self.plan.ws, role.name());
        let why = match (&self.unrepaired, cause) {
            (Some(e), _) => {
                format!("the runner could not repair the workspace ({e}); fix that by hand")
            }
            (None, Some(line)) => format!("its log ends with: {line}; fix what it names"),
            (None, None) => format!(
                "it was killed or crashed each time; see why in {}",
                log.display()
            ),
        };
        format!(
            "{why}, then start it again with `runner --user {user} start` (each start repairs \
             what the runner owns in the workspace first); log: {}",
            log.display()
        )
    }
}
