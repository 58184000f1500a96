//! Capability-overlap ranking with a uniqueness check.

use std::collections::BTreeSet;

/// What a tool can do, as the selector sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSpec {
    pub name: String,
    pub capabilities: BTreeSet<String>,
}

impl ToolSpec {
    pub fn new(name: &str, capabilities: &[&str]) -> Self {
        Self {
            name: name.to_owned(),
            capabilities: capabilities.iter().map(|c| (*c).to_owned()).collect(),
        }
    }
}

/// The one tool chosen for a goal, with the evidence for the choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub tool_name: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    #[error("goal is required")]
    EmptyGoal,
    #[error("no tool satisfies the required capabilities")]
    NoTool,
    /// Several tools share the top score: sort order is not evidence, so ask.
    #[error("ambiguous tool choice requires clarification: {} tie with {score} matching capabilities", tied.join(", "))]
    Ambiguous { tied: Vec<String>, score: usize },
}

/// Chooses the tool whose capabilities cover the most of `required`.
///
/// A tie at the top is an error, not a coin toss: the caller must clarify.
pub fn select_action(
    goal: &str,
    required: &BTreeSet<String>,
    tools: &[ToolSpec],
) -> Result<Action, SelectionError> {
    if goal.trim().is_empty() {
        return Err(SelectionError::EmptyGoal);
    }
    let mut ranked: Vec<(usize, &str)> = tools
        .iter()
        .map(|tool| {
            (
                tool.capabilities.intersection(required).count(),
                tool.name.as_str(),
            )
        })
        .collect();
    // Highest score first; names only make the order reproducible, they never decide.
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));

    let Some(&(best_score, best_name)) = ranked.first() else {
        return Err(SelectionError::NoTool);
    };
    if best_score == 0 {
        return Err(SelectionError::NoTool);
    }
    let tied: Vec<String> = ranked
        .iter()
        .take_while(|(score, _)| *score == best_score)
        .map(|(_, name)| (*name).to_owned())
        .collect();
    if tied.len() > 1 {
        return Err(SelectionError::Ambiguous {
            tied,
            score: best_score,
        });
    }
    Ok(Action {
        tool_name: best_name.to_owned(),
        reason: format!("matches {best_score} required capabilities"),
    })
}
