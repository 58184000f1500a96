//! Durations written on a clock face (`1:12`, `54:45`, `1:02:30`): which layout a header states for them
//! (`h:mm`, `mm:ss`, `h:mm:ss`, `min:sec`), and a cell read in that layout as one number in its smallest
//! field's unit (`1:12` in `h:mm` is 72 min).
//!
//! A cell alone never says its layout: `1:12` is an hour and twelve minutes or a minute and twelve seconds.
//! Only a header that states the layout reads it; a caller refuses a column of such cells without one.

use super::names as vocabulary;

/// The fields a clock layout writes, largest first, each a time unit's symbol (`["h", "min"]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockLayout {
    fields: Vec<&'static str>,
}

/// Time units in order, largest first, with the seconds each holds: the fields a layout may chain.
const FIELDS: [(&str, f64); 3] = [("h", 3600.0), ("min", 60.0), ("s", 1.0)];

impl ClockLayout {
    /// The unit a cell's value is read in: the layout's smallest field (`min` for `h:mm`, `s` for `mm:ss`).
    pub fn unit(&self) -> &'static str {
        self.fields.last().copied().unwrap_or("s")
    }

    /// `cell` read in this layout, in [`Self::unit`]: as many `:`-separated fields as the layout has, the
    /// first any whole number, every later one two digits below 60 (the last may carry a decimal fraction,
    /// `4:38.5`). `None` for a cell that does not fit the layout.
    pub fn read(&self, cell: &str) -> Option<f64> {
        let parts: Vec<&str> = cell.trim().split(':').collect();
        if parts.len() != self.fields.len() {
            return None;
        }
        let smallest = seconds_in(self.unit())?;
        let mut total = 0.0;
        for (i, (part, field)) in parts.iter().zip(&self.fields).enumerate() {
            let last = i + 1 == parts.len();
            let value = field_value(part, i == 0, last)?;
            total += value * seconds_in(field)? / smallest;
        }
        Some(total)
    }
}

/// The seconds one unit of field `symbol` holds.
fn seconds_in(symbol: &str) -> Option<f64> {
    FIELDS.iter().find(|(s, _)| *s == symbol).map(|(_, n)| *n)
}

/// One field's number: digits only (a decimal fraction on the last field); a field after the first is two
/// digits below 60.
fn field_value(part: &str, first: bool, last: bool) -> Option<f64> {
    let (whole, fraction) = match part.split_once('.') {
        Some((w, f)) if last && !f.is_empty() && f.chars().all(|c| c.is_ascii_digit()) => {
            (w, Some(f))
        }
        Some(_) => return None,
        None => (part, None),
    };
    if whole.is_empty() || !whole.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if !first && whole.len() != 2 {
        return None;
    }
    let value: f64 = match fraction {
        Some(f) => format!("{whole}.{f}").parse().ok()?,
        None => whole.parse().ok()?,
    };
    (first || value < 60.0).then_some(value)
}

/// Whether `cell` is written on a clock face: two or three `:`-separated runs of digits, the later ones two
/// digits (the last may carry a decimal fraction). Such a cell is a duration or a time of day, never a plain
/// number: read only in a layout a header states.
pub fn is_clock_cell(cell: &str) -> bool {
    let parts: Vec<&str> = cell.trim().split(':').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .enumerate()
            .all(|(i, p)| field_value(p, i == 0, i + 1 == parts.len()).is_some())
}

/// The clock layout `text` states (`h:mm`, `hh:mm`, `mm:ss`, `m:ss`, `h:mm:ss`, `min:sec`, `hours:minutes`):
/// two or three `:`-separated fields, each a letter of `h`, `m`, `s` (once or twice) or a time unit's name,
/// consecutive from larger to smaller. `None` for any other text.
pub fn clock_layout(text: &str) -> Option<ClockLayout> {
    let fields: Vec<&'static str> = text
        .trim()
        .split(':')
        .map(field_unit)
        .collect::<Option<_>>()?;
    if !(2..=3).contains(&fields.len()) {
        return None;
    }
    let positions: Vec<usize> = fields
        .iter()
        .map(|f| FIELDS.iter().position(|(s, _)| s == f))
        .collect::<Option<_>>()?;
    positions
        .windows(2)
        .all(|w| w[1] == w[0] + 1)
        .then_some(ClockLayout { fields })
}

/// A layout field's unit: `h`/`hh`, `m`/`mm`, `s`/`ss` (a clock's letters: here `m` is minutes, not metres),
/// or a time unit's name the vocabulary knows (`min`, `sec`, `hours`).
fn field_unit(field: &str) -> Option<&'static str> {
    let field = field.trim();
    let letters: Vec<char> = field.chars().collect();
    if (1..=2).contains(&letters.len()) && letters.iter().all(|c| *c == letters[0]) {
        match letters[0].to_ascii_lowercase() {
            'h' => return Some("h"),
            'm' => return Some("min"),
            's' => return Some("s"),
            _ => {}
        }
    }
    let unit = vocabulary::named_unit(field).filter(|u| u.dimension == "time")?;
    FIELDS
        .iter()
        .find(|(s, _)| *s == unit.symbol)
        .map(|(s, _)| *s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_is_stated_by_its_fields_largest_first() {
        for (text, unit) in [
            ("h:mm", "min"),
            ("hh:mm", "min"),
            ("mm:ss", "s"),
            ("m:ss", "s"),
            ("h:mm:ss", "s"),
            ("min:sec", "s"),
            ("hours:minutes", "min"),
        ] {
            assert_eq!(clock_layout(text).map(|l| l.unit()), Some(unit), "{text}");
        }
        for text in ["mm:hh", "h:ss", "h", "min", "x:y", "h:mm:ss:ms", "kg:g", ""] {
            assert_eq!(clock_layout(text), None, "{text}");
        }
    }

    #[test]
    fn a_cell_reads_in_the_stated_layout_only() {
        let hm = clock_layout("h:mm").unwrap();
        let ms = clock_layout("mm:ss").unwrap();
        let hms = clock_layout("h:mm:ss").unwrap();
        assert_eq!(hm.read("1:12"), Some(72.0));
        assert_eq!(ms.read("1:12"), Some(72.0));
        assert_eq!(ms.read("54:45"), Some(3285.0));
        assert_eq!(ms.read("4:38.5"), Some(278.5));
        assert_eq!(hms.read("1:02:30"), Some(3750.0));
        assert_eq!(hm.read("0:45"), Some(45.0));
        // Wrong field count, a later field of one digit or past 59, a sign or text: not a reading.
        for bad in [
            "1:12:00", "72", "1:2", "1:75", "-1:12", "1h12", "1:12 am", "1.5:12",
        ] {
            assert_eq!(hm.read(bad), None, "{bad}");
        }
    }

    #[test]
    fn clock_cells_are_told_apart_from_numbers_and_ratios() {
        for cell in ["1:12", "54:45", "1:02:30", "4:38.5", "08:30"] {
            assert!(is_clock_cell(cell), "{cell}");
        }
        for cell in ["72", "1.12", "3:1", "1:2:3", "a:bc", "1:12:5", "1:1234"] {
            assert!(!is_clock_cell(cell), "{cell}");
        }
    }
}
