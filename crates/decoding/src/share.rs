//! Who decided each generated token: the texts of the tokens the decoder's masks allowed at one position
//! fold into one text (the grammar forced the token) or a real choice, and a decision's positions add up to
//! its [`TokenShare`]. Pure, so the in-process engine's two choosers and the offline tests count alike.
//!
//! One text, not one token: a byte-pair vocabulary spells a fixed text several ways (`"`, `"}`), so "exactly
//! one allowed token" would call nearly every fixed literal a choice. A position is forced when every allowed
//! token's text is a prefix of the longest one: whichever the chooser takes, it writes the same text. What this
//! cannot see: a branch inside one long token (`ab` allowed, its sibling `ac` only as `a` then `c`) counts as
//! forced at that position; the choice shows at the next position only when the short spelling is taken.

pub use runtime::policy::TokenShare;

/// How much choice the masks left at one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowance {
    /// Every allowed token spells (a prefix of) one text.
    Forced,
    /// At least two allowed tokens write different texts (or one ends generation and another goes on).
    Choice,
}

/// The texts allowed at one position, folded as they are found.
#[derive(Debug, Default)]
pub struct AllowedTexts {
    /// The longest allowed text so far; every other allowed text is a prefix of it.
    longest: Vec<u8>,
    /// An end-of-generation token is allowed (it writes no text, and means stop: not a prefix of going on).
    end: bool,
    choice: bool,
}

impl AllowedTexts {
    /// Adds one allowed token: `Some(text)`, or `None` for an end-of-generation token. Returns whether the
    /// position is still forced (callers stop looking at the first choice).
    pub fn add(&mut self, text: Option<&[u8]>) -> bool {
        if self.choice {
            return false;
        }
        match text {
            None => self.end = true,
            Some(t) if t.starts_with(&self.longest) => self.longest = t.to_vec(),
            Some(t) if self.longest.starts_with(t) => {}
            Some(_) => self.choice = true,
        }
        if self.end && !self.longest.is_empty() {
            self.choice = true;
        }
        !self.choice
    }

    pub fn allowance(&self) -> Allowance {
        if self.choice {
            Allowance::Choice
        } else {
            Allowance::Forced
        }
    }
}

/// The allowance of every position of one generation's path, in order (a step back removes the last).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ShareCount {
    positions: Vec<Allowance>,
}

impl ShareCount {
    pub fn push(&mut self, allowance: Allowance) {
        self.positions.push(allowance);
    }

    /// The last position was stepped back over: its token is no longer part of the output.
    pub fn pop(&mut self) {
        self.positions.pop();
    }

    pub fn positions(&self) -> &[Allowance] {
        &self.positions
    }

    pub fn share(&self) -> TokenShare {
        let forced = self
            .positions
            .iter()
            .filter(|a| **a == Allowance::Forced)
            .count() as u32;
        TokenShare::Counted {
            forced,
            choice: self.positions.len() as u32 - forced,
        }
    }
}

/// The share a backend reports when it cannot see the masks it generated under (`backend` names it).
pub fn unknown(backend: &str) -> TokenShare {
    TokenShare::Unknown {
        reason: format!(
            "{backend}: the grammar is applied out of the runner's sight, per-token masks are not visible"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(texts: &[Option<&str>]) -> Allowance {
        let mut allowed = AllowedTexts::default();
        for t in texts {
            allowed.add(t.map(str::as_bytes));
        }
        allowed.allowance()
    }

    #[test]
    fn spellings_of_one_text_are_forced_and_different_texts_or_an_end_are_a_choice() {
        assert_eq!(fold(&[Some("\"")]), Allowance::Forced);
        assert_eq!(
            fold(&[Some("\""), Some("\"}"), Some("\",")]),
            Allowance::Choice
        );
        assert_eq!(
            fold(&[Some("\"}"), Some("\""), Some("\"}")]),
            Allowance::Forced
        );
        assert_eq!(fold(&[Some("met"), Some("not")]), Allowance::Choice);
        assert_eq!(fold(&[None]), Allowance::Forced);
        assert_eq!(fold(&[None, Some("}")]), Allowance::Choice);
        assert_eq!(fold(&[Some("}"), None]), Allowance::Choice);
    }

    #[test]
    fn a_step_back_removes_its_position_from_the_count() {
        let mut count = ShareCount::default();
        count.push(Allowance::Forced);
        count.push(Allowance::Choice);
        count.push(Allowance::Choice);
        count.pop();
        assert_eq!(
            count.share(),
            TokenShare::Counted {
                forced: 1,
                choice: 1
            }
        );
        assert_eq!(count.share().forced_share(), Some(0.5));
        assert_eq!(ShareCount::default().share().forced_share(), None);
    }
}
