//! Reading a table's cells as numbers, column by column: a footnote marker after a number (`91.4*`,
//! `12.4¹`, `12.4[a]`) is split off and kept as a note on the row, the decimal mark is decided per
//! column (`7,4` is 7.4 in a column that writes decimal commas), and cells whose units differ (`4 min`,
//! `270 s`) are converted to one unit when they measure the same thing.
//!
//! What cannot be read exactly is refused by name, never guessed: a column whose `1,250` could be
//! thousands or decimals in a table that writes decimal commas, a column mixing both marks, or cells
//! whose units cannot be compared. Such a column is not a series; it is listed as unread with its
//! [`ColumnError`], so the claim that needs it stays unverified.

use forge_language::numbers::{self, DecimalEvidence, DecimalMark, Quantity};
use forge_language::units::{self, UnitError};

/// Why a column that holds numbers is not read as a series.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ColumnError {
    #[error(
        "column {column:?}: {cell:?} could be a thousands separator or a decimal mark, and the column's other cells do not say which (this table writes decimal commas)"
    )]
    AmbiguousDecimalMark { column: String, cell: String },
    #[error(
        "column {column:?} writes decimals both ways ({comma_cell:?} with a comma, {point_cell:?} with a point)"
    )]
    MixedDecimalMarks {
        column: String,
        comma_cell: String,
        point_cell: String,
    },
    #[error("column {column:?}: its cells' units cannot be put in one unit: {source}")]
    Units { column: String, source: UnitError },
    #[error(
        "column {column:?}: {cell:?} is a time written on a clock face, and the header does not state its layout (h:mm or mm:ss), so it could be hours and minutes or minutes and seconds"
    )]
    ClockLayoutUnstated { column: String, cell: String },
    #[error(
        "column {column:?}: {cell:?} does not fit the clock layout {layout:?} its header states"
    )]
    ClockCell {
        column: String,
        cell: String,
        layout: String,
    },
}

impl ColumnError {
    /// The column's header name.
    pub fn column(&self) -> &str {
        match self {
            Self::AmbiguousDecimalMark { column, .. }
            | Self::MixedDecimalMarks { column, .. }
            | Self::Units { column, .. }
            | Self::ClockLayoutUnstated { column, .. }
            | Self::ClockCell { column, .. } => column,
        }
    }
}

/// The cells of a table's body with their footnote markers split off.
pub(crate) struct Grid {
    /// Cell text without a trailing footnote marker, trimmed.
    pub text: Vec<Vec<String>>,
    /// The marker each cell had (`*`, `¹`, `[a]`), if any.
    pub markers: Vec<Vec<Option<String>>>,
}

impl Grid {
    /// Splits every cell of `rows` (padded to `width`). A marker is split off only where the rest reads
    /// as a number, so `Note*` or a label keeps its text.
    pub fn new(rows: &[Vec<String>], width: usize) -> Grid {
        let mut text = Vec::with_capacity(rows.len());
        let mut markers = Vec::with_capacity(rows.len());
        for row in rows {
            let (cells, marks): (Vec<String>, Vec<Option<String>>) = (0..width)
                .map(|c| {
                    let cell = row.get(c).map_or("", |c| c.trim());
                    match numbers::split_note_marker(cell) {
                        (value, Some(marker)) if reads_as_number(value) => {
                            (value.to_owned(), Some(marker.to_owned()))
                        }
                        _ => (cell.to_owned(), None),
                    }
                })
                .unzip();
            text.push(cells);
            markers.push(marks);
        }
        Grid { text, markers }
    }
}

/// A column whose cells are written on a clock face (`1:12`), read in the layout its header states (`h:mm`)
/// as numbers in the layout's smallest unit (`1:12` → 72 min): `Ok(None)` when no cell of `body` is a clock
/// cell (not such a column); [`ColumnError::ClockLayoutUnstated`] when the header states no layout (a cell
/// alone never says whether it is hours or minutes), [`ColumnError::ClockCell`] for a cell that is neither
/// missing nor in the layout.
pub(crate) fn clock_column(
    grid: &Grid,
    column: usize,
    body: &[usize],
    name: &str,
    header_unit: Option<&str>,
) -> Result<Option<Vec<Option<Quantity>>>, ColumnError> {
    let Some(first) = body
        .iter()
        .map(|&r| grid.text[r][column].as_str())
        .find(|cell| units::clock::is_clock_cell(cell))
    else {
        return Ok(None);
    };
    let Some(layout) = header_unit.and_then(units::clock::clock_layout) else {
        return Err(ColumnError::ClockLayoutUnstated {
            column: name.to_owned(),
            cell: first.to_owned(),
        });
    };
    let mut quantities = Vec::with_capacity(grid.text.len());
    for (r, row) in grid.text.iter().enumerate() {
        let cell = row[column].as_str();
        if forge_language::tables::is_missing_marker(cell) {
            quantities.push(None);
            continue;
        }
        match layout.read(cell) {
            Some(value) => quantities.push(Some(Quantity {
                value,
                unit: Some(layout.unit().to_owned()),
            })),
            // A summary row's cell outside the layout is not this column's data; a body row's is.
            None if !body.contains(&r) => quantities.push(None),
            None => {
                return Err(ColumnError::ClockCell {
                    column: name.to_owned(),
                    cell: cell.to_owned(),
                    layout: header_unit.unwrap_or_default().to_owned(),
                });
            }
        }
    }
    Ok(Some(quantities))
}

/// Whether `cell` reads as a number with either decimal mark.
pub(crate) fn reads_as_number(cell: &str) -> bool {
    numbers::parse_quantity(cell).is_some()
        || numbers::parse_quantity_with(cell, DecimalMark::Comma).is_some()
}

/// The decimal mark of each column over the body rows `body`. A table where no cell needs a decimal
/// comma reads every column with a point (commas group thousands, as everywhere before). A table where
/// some cell does decides per column from its own cells: only-comma or only-point evidence decides; both
/// is [`ColumnError::MixedDecimalMarks`]; cells that fit both (`1,250`) and nothing else is
/// [`ColumnError::AmbiguousDecimalMark`].
pub(crate) fn decimal_marks(
    grid: &Grid,
    body: &[usize],
    names: &[String],
) -> Vec<Result<DecimalMark, ColumnError>> {
    let width = names.len();
    let evidence = |r: usize, c: usize| -> Option<DecimalEvidence> {
        let cell = &grid.text[r][c];
        reads_as_number(cell).then(|| numbers::decimal_evidence(cell))
    };
    let table_uses_commas = body
        .iter()
        .any(|&r| (0..width).any(|c| evidence(r, c) == Some(DecimalEvidence::Comma)));
    (0..width)
        .map(|c| {
            if !table_uses_commas {
                return Ok(DecimalMark::Point);
            }
            let first = |wanted: DecimalEvidence| {
                body.iter()
                    .find(|&&r| evidence(r, c) == Some(wanted))
                    .map(|&r| grid.text[r][c].clone())
            };
            let column = names[c].clone();
            match (
                first(DecimalEvidence::Comma),
                first(DecimalEvidence::Point),
                first(DecimalEvidence::Either),
            ) {
                (Some(comma_cell), Some(point_cell), _) => Err(ColumnError::MixedDecimalMarks {
                    column,
                    comma_cell,
                    point_cell,
                }),
                (Some(_), None, _) => Ok(DecimalMark::Comma),
                (None, Some(_), _) => Ok(DecimalMark::Point),
                (None, None, Some(cell)) => Err(ColumnError::AmbiguousDecimalMark { column, cell }),
                (None, None, None) => Ok(DecimalMark::Point),
            }
        })
        .collect()
}

/// Puts a column's quantities in one unit: cells written in two or more units (`4 min`, `270 s`), or in
/// a known unit other than the header's, are converted to the header's unit (else the first cell's).
/// Returns the column's unit; [`ColumnError::Units`] when the units cannot be compared (`2 kg`, `3 km`).
pub(crate) fn one_unit(
    column: &str,
    header_unit: Option<&str>,
    cells: &mut [Option<Quantity>],
) -> Result<Option<String>, ColumnError> {
    // Distinct cell units in order of first appearance.
    let mut distinct: Vec<String> = Vec::new();
    for unit in cells.iter().flatten().filter_map(|q| q.unit.as_ref()) {
        if !distinct.contains(unit) {
            distinct.push(unit.clone());
        }
    }
    let header_differs = match (header_unit, distinct.as_slice()) {
        (Some(h), [only]) => units::read(h)
            .zip(units::read(only))
            .is_some_and(|(a, b)| a.symbol != b.symbol),
        _ => false,
    };
    if distinct.len() < 2 && !header_differs {
        return Ok(header_unit
            .map(str::to_owned)
            .or(distinct.into_iter().next()));
    }
    let refs: Vec<&str> = distinct.iter().map(String::as_str).collect();
    let error = |source| ColumnError::Units {
        column: column.to_owned(),
        source,
    };
    // `Revenue ($k)` over `$4.5`: the cell may repeat the sign and mean 4.5 thousand, or mean $4.5. Not guessed.
    if let Some(header) = header_unit
        && let Some(scale) = units::scale_of(header)
        && refs.iter().any(|cell| {
            units::scale_of(cell).is_none()
                && units::read(cell)
                    .zip(units::read(header))
                    .is_some_and(|(c, h)| c.dimension == h.dimension)
        })
    {
        return Err(error(units::UnitError::ScaleUnstated {
            unit: header.to_owned(),
            scale,
        }));
    }
    let target = units::common_unit(header_unit, &refs)
        .map_err(error)?
        .map(str::to_owned);
    if let Some(target) = &target {
        for quantity in cells.iter_mut().flatten() {
            if let Some(unit) = quantity.unit.take() {
                quantity.value = units::convert(quantity.value, &unit, target).map_err(error)?;
            }
            quantity.unit = Some(target.clone());
        }
    }
    Ok(target)
}

/// Longest header suffix read as a unit (`(min)`, `[kWh]`, `（分钟）`).
const MAX_UNIT_CHARS: usize = 24;

/// `Task Success (%)` → (`Task Success`, `%`); `Uptime %` → (`Uptime`, `%`); `Energy [kWh]` →
/// (`Energy`, `kWh`); `Wait, minutes` → (`Wait`, `minutes`) when the words after the comma are a unit the
/// vocabulary knows. A bracketed suffix with digits (`New loans (Q3)`) is part of the name.
pub(crate) fn split_unit(header: &str) -> (String, Option<String>) {
    let header = header.trim();
    if let Some((name, unit)) = header.rsplit_once([',', '，'])
        && !name.trim().is_empty()
        && forge_language::units::read(unit).is_some()
    {
        return (name.trim().to_owned(), Some(unit.trim().to_owned()));
    }
    for (open, close) in [('(', ')'), ('[', ']'), ('（', '）')] {
        if let Some(inner_end) = header.strip_suffix(close)
            && let Some(start) = inner_end.rfind(open)
        {
            let name = inner_end[..start].trim();
            let unit = inner_end[start + open.len_utf8()..].trim();
            // Digits make a bracket part of the name (`New loans (Q3)`), unless the bracket is a known unit
            // (`('000)`: thousands).
            let unit_like = !unit.is_empty()
                && unit.chars().count() <= MAX_UNIT_CHARS
                && (!unit.chars().any(|c| c.is_ascii_digit())
                    || forge_language::units::read(unit).is_some());
            if unit_like && !name.is_empty() {
                return (name.to_owned(), Some(unit.to_owned()));
            }
        }
    }
    if let Some(name) = header.strip_suffix('%').map(str::trim)
        && !name.is_empty()
    {
        return (name.to_owned(), Some("%".to_owned()));
    }
    (header.to_owned(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(rows: &[&[&str]]) -> Grid {
        let rows: Vec<Vec<String>> = rows
            .iter()
            .map(|r| r.iter().map(|s| (*s).to_owned()).collect())
            .collect();
        Grid::new(&rows, rows[0].len())
    }

    #[test]
    fn markers_split_only_off_numbers() {
        let g = grid(&[&["Beech*", "91.4*", "88.0¹", "96.2[a]", "42 min†", "12 m²"]]);
        assert_eq!(
            g.text[0],
            ["Beech*", "91.4", "88.0", "96.2", "42 min", "12 m²"]
        );
        let markers: Vec<Option<&str>> = g.markers[0].iter().map(Option::as_deref).collect();
        assert_eq!(
            markers,
            [None, Some("*"), Some("¹"), Some("[a]"), Some("†"), None]
        );
    }

    #[test]
    fn decimal_marks_are_decided_per_column() {
        let names: Vec<String> = ["Plot", "Yield", "Vines", "Rain", "Mixed"]
            .map(String::from)
            .to_vec();
        let g = grid(&[
            &["Nord", "7,4", "9,600", "412", "7,4"],
            &["Sud", "6,1", "7,200", "398", "6.1"],
        ]);
        let marks = decimal_marks(&g, &[0, 1], &names);
        assert_eq!(marks[1], Ok(DecimalMark::Comma));
        assert_eq!(marks[3], Ok(DecimalMark::Point));
        assert_eq!(
            marks[2],
            Err(ColumnError::AmbiguousDecimalMark {
                column: "Vines".into(),
                cell: "9,600".into()
            })
        );
        assert!(matches!(
            marks[4],
            Err(ColumnError::MixedDecimalMarks { .. })
        ));
        assert!(
            marks[2]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("\"9,600\"")
        );
        // No decimal comma anywhere: commas group thousands, as before.
        let g = grid(&[&["A", "1,250", "7.5"], &["B", "980", "6.5"]]);
        let names: Vec<String> = ["Site", "Visits", "Score"].map(String::from).to_vec();
        assert!(
            decimal_marks(&g, &[0, 1], &names)
                .iter()
                .all(|m| *m == Ok(DecimalMark::Point))
        );
    }

    #[test]
    fn cell_units_become_one_unit_or_the_column_is_refused() {
        let q = |v: f64, u: &str| {
            Some(Quantity {
                value: v,
                unit: Some(u.to_owned()),
            })
        };
        let mut cells = [q(4.0, "min"), q(270.0, "s"), None];
        assert_eq!(one_unit("Wait", None, &mut cells), Ok(Some("min".into())));
        assert_eq!(cells[1].as_ref().unwrap().value, 4.5);
        let mut seconds = [q(270.0, "s"), q(300.0, "s")];
        assert_eq!(
            one_unit("Wait", Some("min"), &mut seconds),
            Ok(Some("min".into()))
        );
        assert_eq!(seconds[0].as_ref().unwrap().value, 4.5);
        let mut mixed = [q(2.0, "kg"), q(3.0, "km")];
        assert!(matches!(
            one_unit("Load", None, &mut mixed),
            Err(ColumnError::Units { .. })
        ));
        let mut unknown = [q(2.0, "widgets"), q(3.0, "min")];
        assert!(one_unit("Load", None, &mut unknown).is_err());
        // A header counted in a scale over cells in the unscaled unit: 4.5 thousand or $4.5, not guessed.
        let mut money = [q(4.5, "$")];
        assert!(matches!(
            one_unit("Revenue", Some("$k"), &mut money),
            Err(ColumnError::Units {
                source: units::UnitError::ScaleUnstated { .. },
                ..
            })
        ));
        // One cell unit and a header unit the vocabulary does not know: kept as written.
        let mut money = [q(4.5, "$")];
        assert_eq!(
            one_unit("Revenue", Some("$ thousands of"), &mut money),
            Ok(Some("$ thousands of".into()))
        );
        assert_eq!(money[0].as_ref().unwrap().value, 4.5);
    }
}
