//! Computed numbers as a reader should copy them: binary floating point's noise past twelve significant
//! digits is dropped (`0.1 + 0.2` is `0.3`), so no answer, conversion or tool result carries it as data.

/// A fraction to 12 significant digits: what binary floating point adds past them is noise (`0.1 + 0.2` is
/// `0.3`, `99 / 10000 * 100` is `0.99`, not `0.9900000000000001`), which a reader would copy as data. A whole
/// number is exact already and kept (`2 ** 49`).
pub fn without_float_noise(value: f64) -> f64 {
    if value == 0.0 || !value.is_finite() || value.fract() == 0.0 {
        return value;
    }
    let magnitude = value.abs().log10().floor() as i32;
    let factor = 10f64.powi(11 - magnitude);
    let rounded = (value * factor).round() / factor;
    if rounded.is_finite() { rounded } else { value }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_lose_their_noise_and_whole_numbers_stay_exact() {
        assert_eq!(without_float_noise(0.1 + 0.2), 0.3);
        assert_eq!(without_float_noise(8.0 * 1.8 + 32.0 + 1e-14), 46.4);
        assert_eq!(
            without_float_noise(562_949_953_421_312.0),
            562_949_953_421_312.0
        );
        assert_eq!(
            without_float_noise(-0.000_012_345_678_901_234),
            -0.000_012_345_678_901_2
        );
        assert!(without_float_noise(f64::NAN).is_nan());
    }
}
