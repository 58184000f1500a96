//! Tool contracts: required and optional argument names, checked before any handler runs.

use std::collections::{BTreeMap, BTreeSet};

/// Which argument names a tool accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolContract {
    pub name: String,
    pub required: BTreeSet<String>,
    pub optional: BTreeSet<String>,
}

impl ToolContract {
    pub fn new(name: &str, required: &[&str], optional: &[&str]) -> Self {
        let set = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
        Self {
            name: name.to_owned(),
            required: set(required),
            optional: set(optional),
        }
    }

    /// Checks argument names only: every required name present, nothing undeclared.
    ///
    /// Missing names are reported before unexpected ones; both lists are sorted.
    pub fn check<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Result<(), ContractError> {
        let given: BTreeSet<&str> = names.into_iter().collect();
        let missing: Vec<String> = self
            .required
            .iter()
            .filter(|name| !given.contains(name.as_str()))
            .cloned()
            .collect();
        let _unexpected: Vec<String> = given
            .iter()
            .filter(|name| !self.required.contains(**name) && !self.optional.contains(**name))
            .map(|name| (*name).to_owned())
            .collect();
        if !missing.is_empty() {
            return Err(ContractError::Missing {
                tool: self.name.clone(),
                names: missing,
            });
        }
        Ok(())
    }
}

/// A handler's output, labelled with the tool that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionResult<T> {
    pub tool_name: String,
    pub output: T,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    #[error("missing arguments for {tool}: {}", names.join(", "))]
    Missing { tool: String, names: Vec<String> },
    #[error("unexpected arguments for {tool}: {}", names.join(", "))]
    Unexpected { tool: String, names: Vec<String> },
}

/// Runs `handler` only when `arguments` satisfy `contract`.
pub fn execute_tool<V, T>(
    contract: &ToolContract,
    handler: impl FnOnce(&BTreeMap<String, V>) -> T,
    arguments: &BTreeMap<String, V>,
) -> Result<ExecutionResult<T>, ContractError> {
    contract.check(arguments.keys().map(String::as_str))?;
    Ok(ExecutionResult {
        tool_name: contract.name.clone(),
        output: handler(arguments),
    })
}
