//! Observations with contiguous sequence numbers and a terminal flag.

use std::fmt;
use std::str::FromStr;

/// How a tool call ended. A closed set: an unknown status cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObservationStatus {
    Ok,
    /// A transient failure (a 503, a timeout): the loop may retry or replan.
    RetryableError,
    /// An unrecoverable failure (permission denied): the loop must end.
    FatalError,
}

impl ObservationStatus {
    pub const ALL: [ObservationStatus; 3] = [Self::Ok, Self::RetryableError, Self::FatalError];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::RetryableError => "retryable_error",
            Self::FatalError => "fatal_error",
        }
    }

    /// Only a fatal error ends the loop.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::FatalError)
    }
}

impl fmt::Display for ObservationStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ObservationStatus {
    type Err = StateError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
            .ok_or_else(|| StateError::UnknownStatus(text.to_owned()))
    }
}

/// One recorded tool result. Fields are read-only once recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation<P> {
    sequence: usize,
    tool_name: String,
    status: ObservationStatus,
    payload: P,
}

impl<P> Observation<P> {
    /// 1 for the first observation, then +1 each time, with no gaps.
    pub fn sequence(&self) -> usize {
        self.sequence
    }
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }
    pub fn status(&self) -> ObservationStatus {
        self.status
    }
    pub fn payload(&self) -> &P {
        &self.payload
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("loop state is terminal: cannot record {tool_name} after a fatal error")]
    Terminal { tool_name: String },
    #[error("unknown observation status {0:?} (expected ok, retryable_error or fatal_error)")]
    UnknownStatus(String),
}

/// The ordered history of a run plus whether it may continue.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopState<P> {
    observations: Vec<Observation<P>>,
    terminal: bool,
}

impl<P> Default for LoopState<P> {
    fn default() -> Self {
        Self {
            observations: Vec::new(),
            terminal: false,
        }
    }
}

impl<P> LoopState<P> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn observations(&self) -> &[Observation<P>] {
        &self.observations
    }

    pub fn into_observations(self) -> Vec<Observation<P>> {
        self.observations
    }

    pub fn terminal(&self) -> bool {
        self.terminal
    }

    /// Appends one observation and returns it.
    ///
    /// Recording into a terminal state is refused: nothing may happen after a fatal error.
    pub fn record(
        &mut self,
        tool_name: &str,
        status: ObservationStatus,
        payload: P,
    ) -> Result<&Observation<P>, StateError> {
        if self.terminal {
            return Err(StateError::Terminal {
                tool_name: tool_name.to_owned(),
            });
        }
        let sequence = self.observations.len() + 1;
        self.observations.push(Observation {
            sequence,
            tool_name: tool_name.to_owned(),
            status,
            payload,
        });
        if status.is_terminal() {
            self.terminal = true;
        }
        Ok(&self.observations[sequence - 1])
    }
}
