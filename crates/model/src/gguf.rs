//! A small pure-Rust reader for GGUF headers: metadata, tensor table and the byte extent the tensors need.
//!
//! It is not a model loader (llama.cpp does that in `engine`); it lets `inspect` describe and sanity-check a
//! file in milliseconds without loading 500 MB of weights, and it needs no llama.cpp to build.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

/// A metadata value, reduced to what inspection needs (large arrays keep only their length).
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(String),
    /// Arrays (tokenizer vocabularies etc.) are summarised by element type and length.
    Array {
        len: u64,
    },
}

impl MetaValue {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            MetaValue::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    pub dims: Vec<u64>,
    pub ggml_type: u32,
    /// Offset relative to the start of the tensor data section.
    pub offset: u64,
}

impl TensorInfo {
    /// Element count, or None when the dimensions' product does not fit in a u64 (a corrupt header;
    /// `read_header` refuses those, so a parsed header always has Some).
    pub fn elements(&self) -> Option<u64> {
        self.dims
            .iter()
            .try_fold(1u64, |acc, d| acc.checked_mul(*d))
    }
    /// Bytes this tensor occupies, when its ggml type is known and the size fits in a u64.
    pub fn bytes(&self) -> Option<u64> {
        let (block, size) = ggml_type_block(self.ggml_type)?;
        self.elements()?.div_ceil(block).checked_mul(size)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GgufHeader {
    pub version: u32,
    pub metadata: BTreeMap<String, MetaValue>,
    pub tensors: Vec<TensorInfo>,
    /// Absolute file offset where tensor data begins (aligned).
    pub data_offset: u64,
}

impl GgufHeader {
    pub fn str(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).and_then(MetaValue::as_str)
    }
    pub fn u64(&self, key: &str) -> Option<u64> {
        self.metadata.get(key).and_then(MetaValue::as_u64)
    }
    pub fn architecture(&self) -> Option<&str> {
        self.str("general.architecture")
    }
    /// Total elements over all tensors (saturating: `read_header` already refused a sum that overflows).
    pub fn parameter_count(&self) -> u64 {
        self.tensors
            .iter()
            .map(|t| t.elements().unwrap_or(u64::MAX))
            .fold(0u64, u64::saturating_add)
    }
    /// The smallest file size that holds every tensor, or None when a tensor has an unknown ggml type
    /// (or, for a hand-built header, when the extent does not fit in a u64).
    pub fn required_file_size(&self) -> Option<u64> {
        let mut end = self.data_offset;
        for t in &self.tensors {
            end = end.max(
                self.data_offset
                    .checked_add(t.offset)?
                    .checked_add(t.bytes()?)?,
            );
        }
        Some(end)
    }
    pub fn context_length(&self) -> Option<u64> {
        self.u64(&format!("{}.context_length", self.architecture()?))
    }
    pub fn quantization(&self) -> Option<&'static str> {
        self.u64("general.file_type").and_then(file_type_name)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("cannot read file: {0}")]
    Io(#[from] std::io::Error),
    /// Deliberately without the bytes found: inspection must never echo a file's contents.
    #[error("not a GGUF file (it does not start with the \"GGUF\" magic)")]
    BadMagic,
    #[error("unsupported GGUF version {0} (supported: 2, 3)")]
    BadVersion(u32),
    #[error("corrupt GGUF header: {0}")]
    Corrupt(String),
}

/// Guards against absurd counts in a corrupt header before we allocate.
const MAX_STRING: u64 = 64 << 20;
const MAX_ENTRIES: u64 = 1 << 24;
const MAX_ARRAY_LEN: u64 = MAX_ENTRIES * 4;
/// Most tensors reserved up front; a header claiming more grows the table only as entries actually parse.
const TENSOR_PREALLOC: u64 = 4096;
/// Arrays of arrays are legal GGUF; deeper nesting than this is not something llama.cpp writes, and
/// unbounded recursion would let a small file overflow the stack.
const MAX_ARRAY_DEPTH: u32 = 4;
const MAX_DIMS: u32 = 8;

pub fn read_header(path: &Path) -> Result<GgufHeader, GgufError> {
    let file = File::open(path)?;
    parse_header(&mut BufReader::with_capacity(1 << 16, file))
}

/// Parse a GGUF header from any seekable reader. Every count, size and offset is checked: a header whose
/// arithmetic overflows, or that claims more than it holds, is `Corrupt` — never a panic, never an
/// allocation sized by an unchecked count.
pub fn parse_header<R: Read + Seek>(r: &mut R) -> Result<GgufHeader, GgufError> {
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            GgufError::BadMagic
        } else {
            GgufError::Io(e)
        }
    })?;
    if &magic != b"GGUF" {
        return Err(GgufError::BadMagic);
    }
    let version = read_u32(r)?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::BadVersion(version));
    }
    let n_tensors = read_u64(r)?;
    let n_kv = read_u64(r)?;
    if n_tensors > MAX_ENTRIES || n_kv > MAX_ENTRIES {
        return Err(GgufError::Corrupt(format!(
            "{n_tensors} tensors / {n_kv} metadata entries"
        )));
    }
    let mut metadata = BTreeMap::new();
    for _ in 0..n_kv {
        let key = read_string(r)?;
        let ty = read_u32(r)?;
        let value = read_value(r, ty, 0)?;
        metadata.insert(key, value);
    }
    let mut tensors = Vec::with_capacity(n_tensors.min(TENSOR_PREALLOC) as usize);
    let mut parameters: u64 = 0;
    for _ in 0..n_tensors {
        let name = read_string(r)?;
        let n_dims = read_u32(r)?;
        if n_dims > MAX_DIMS {
            return Err(GgufError::Corrupt(format!(
                "tensor {name:?} has {n_dims} dimensions (at most {MAX_DIMS})"
            )));
        }
        let dims = (0..n_dims)
            .map(|_| read_u64(r))
            .collect::<Result<Vec<_>, _>>()?;
        let ggml_type = read_u32(r)?;
        let offset = read_u64(r)?;
        let tensor = TensorInfo {
            name,
            dims,
            ggml_type,
            offset,
        };
        let elements = tensor.elements().ok_or_else(|| {
            GgufError::Corrupt(format!(
                "tensor {:?}: dimensions {:?} overflow a 64-bit element count",
                tensor.name, tensor.dims
            ))
        })?;
        parameters = parameters.checked_add(elements).ok_or_else(|| {
            GgufError::Corrupt(format!(
                "tensor {:?}: the total element count overflows 64 bits",
                tensor.name
            ))
        })?;
        if ggml_type_block(ggml_type).is_some() && tensor.bytes().is_none() {
            return Err(GgufError::Corrupt(format!(
                "tensor {:?}: its byte size overflows 64 bits",
                tensor.name
            )));
        }
        tensors.push(tensor);
    }
    let alignment = match metadata.get("general.alignment") {
        None => 32,
        Some(v) => v.as_u64().filter(|a| a.is_power_of_two()).ok_or_else(|| {
            GgufError::Corrupt(format!("general.alignment {v:?} is not a power of two"))
        })?,
    };
    let pos = r.stream_position()?;
    let data_offset = pos
        .div_ceil(alignment)
        .checked_mul(alignment)
        .ok_or_else(|| {
            GgufError::Corrupt(format!("data offset overflows with alignment {alignment}"))
        })?;
    for t in &tensors {
        if let Some(bytes) = t.bytes()
            && data_offset
                .checked_add(t.offset)
                .and_then(|s| s.checked_add(bytes))
                .is_none()
        {
            return Err(GgufError::Corrupt(format!(
                "tensor {:?}: offset {} + {bytes} bytes lies beyond any file",
                t.name, t.offset
            )));
        }
    }
    Ok(GgufHeader {
        version,
        metadata,
        tensors,
        data_offset,
    })
}

fn read_u32(r: &mut impl Read) -> Result<u32, GgufError> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b).map_err(truncated)?;
    Ok(u32::from_le_bytes(b))
}
fn read_u64(r: &mut impl Read) -> Result<u64, GgufError> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b).map_err(truncated)?;
    Ok(u64::from_le_bytes(b))
}
fn truncated(e: std::io::Error) -> GgufError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        GgufError::Corrupt("header ends early (truncated file?)".into())
    } else {
        GgufError::Io(e)
    }
}
fn read_string(r: &mut impl Read) -> Result<String, GgufError> {
    let len = read_u64(r)?;
    if len > MAX_STRING {
        return Err(GgufError::Corrupt(format!("string of {len} bytes")));
    }
    // Grow with the bytes actually present instead of reserving what the header claims.
    let mut buf = Vec::new();
    r.by_ref().take(len).read_to_end(&mut buf)?;
    if buf.len() as u64 != len {
        return Err(truncated(std::io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Byte width of fixed-size GGUF scalar value types.
fn scalar_width(ty: u32) -> Option<u64> {
    Some(match ty {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        10..=12 => 8,
        _ => return None,
    })
}

fn read_value<R: Read + Seek>(r: &mut R, ty: u32, depth: u32) -> Result<MetaValue, GgufError> {
    Ok(match ty {
        0 => MetaValue::Int(read_n::<1>(r)?[0] as i128),
        1 => MetaValue::Int(read_n::<1>(r)?[0] as i8 as i128),
        2 => MetaValue::Int(u16::from_le_bytes(read_n(r)?) as i128),
        3 => MetaValue::Int(i16::from_le_bytes(read_n(r)?) as i128),
        4 => MetaValue::Int(u32::from_le_bytes(read_n(r)?) as i128),
        5 => MetaValue::Int(i32::from_le_bytes(read_n(r)?) as i128),
        6 => MetaValue::Float(f32::from_le_bytes(read_n(r)?) as f64),
        7 => MetaValue::Bool(read_n::<1>(r)?[0] != 0),
        8 => MetaValue::Str(read_string(r)?),
        9 => {
            if depth >= MAX_ARRAY_DEPTH {
                return Err(GgufError::Corrupt(format!(
                    "arrays nested deeper than {MAX_ARRAY_DEPTH}"
                )));
            }
            let elem = read_u32(r)?;
            let len = read_u64(r)?;
            if len > MAX_ARRAY_LEN {
                return Err(GgufError::Corrupt(format!("array of {len} elements")));
            }
            if let Some(w) = scalar_width(elem) {
                // Skip fixed-width arrays in one step instead of element by element; the bounds above keep
                // w * len far below i64::MAX. Skipping by reading (not seeking) notices a short file here.
                let skip = w * len;
                let skipped = std::io::copy(&mut r.by_ref().take(skip), &mut std::io::sink())?;
                if skipped != skip {
                    return Err(truncated(std::io::ErrorKind::UnexpectedEof.into()));
                }
            } else {
                for _ in 0..len {
                    read_value(r, elem, depth + 1)?;
                }
            }
            MetaValue::Array { len }
        }
        10 => MetaValue::Int(u64::from_le_bytes(read_n(r)?) as i128),
        11 => MetaValue::Int(i64::from_le_bytes(read_n(r)?) as i128),
        12 => MetaValue::Float(f64::from_le_bytes(read_n(r)?)),
        other => {
            return Err(GgufError::Corrupt(format!(
                "unknown metadata value type {other}"
            )));
        }
    })
}

fn read_n<const N: usize>(r: &mut impl Read) -> Result<[u8; N], GgufError> {
    let mut b = [0u8; N];
    r.read_exact(&mut b).map_err(truncated)?;
    Ok(b)
}

/// (elements per block, bytes per block) of ggml tensor types, from ggml's type traits.
pub fn ggml_type_block(ty: u32) -> Option<(u64, u64)> {
    Some(match ty {
        0 => (1, 4),      // F32
        1 => (1, 2),      // F16
        2 => (32, 18),    // Q4_0
        3 => (32, 20),    // Q4_1
        6 => (32, 22),    // Q5_0
        7 => (32, 24),    // Q5_1
        8 => (32, 34),    // Q8_0
        9 => (32, 36),    // Q8_1
        10 => (256, 84),  // Q2_K
        11 => (256, 110), // Q3_K
        12 => (256, 144), // Q4_K
        13 => (256, 176), // Q5_K
        14 => (256, 210), // Q6_K
        15 => (256, 292), // Q8_K
        16 => (256, 66),  // IQ2_XXS
        17 => (256, 74),  // IQ2_XS
        18 => (256, 98),  // IQ3_XXS
        19 => (256, 50),  // IQ1_S
        20 => (32, 18),   // IQ4_NL
        21 => (256, 110), // IQ3_S
        22 => (256, 82),  // IQ2_S
        23 => (256, 136), // IQ4_XS
        24 => (1, 1),     // I8
        25 => (1, 2),     // I16
        26 => (1, 4),     // I32
        27 => (1, 8),     // I64
        28 => (1, 8),     // F64
        29 => (256, 56),  // IQ1_M
        30 => (1, 2),     // BF16
        _ => return None,
    })
}

/// llama.cpp's `llama_ftype` names for `general.file_type`.
pub fn file_type_name(ft: u64) -> Option<&'static str> {
    Some(match ft {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// splitmix64: a tiny deterministic generator, so every fuzz case is reproducible from its seed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
    }

    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    }

    /// A structurally valid GGUF v3 header with `n_tensors` tensors and a few metadata kinds (scalars,
    /// strings, arrays of scalars and of strings), padded to the data section.
    fn valid_header(rng: &mut Rng, n_tensors: u64) -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend(n_tensors.to_le_bytes());
        b.extend(5u64.to_le_bytes());
        string(&mut b, "general.architecture");
        b.extend(8u32.to_le_bytes());
        string(&mut b, "fuzz");
        string(&mut b, "general.file_type");
        b.extend(4u32.to_le_bytes());
        b.extend((rng.below(33) as u32).to_le_bytes());
        string(&mut b, "fuzz.context_length");
        b.extend(10u32.to_le_bytes());
        b.extend(rng.next().to_le_bytes());
        string(&mut b, "tokenizer.ggml.scores");
        b.extend(9u32.to_le_bytes());
        b.extend(6u32.to_le_bytes());
        let n = rng.below(5);
        b.extend(n.to_le_bytes());
        b.extend(vec![0u8; 4 * n as usize]);
        string(&mut b, "tokenizer.ggml.tokens");
        b.extend(9u32.to_le_bytes());
        b.extend(8u32.to_le_bytes());
        b.extend(2u64.to_le_bytes());
        string(&mut b, "a");
        string(&mut b, "bc");
        let mut offset = 0u64;
        for i in 0..n_tensors {
            string(&mut b, &format!("t{i}"));
            let dims = 1 + rng.below(3);
            b.extend((dims as u32).to_le_bytes());
            let mut elements = 1;
            for _ in 0..dims {
                let d = 1 + rng.below(64);
                elements *= d;
                b.extend(d.to_le_bytes());
            }
            b.extend(0u32.to_le_bytes()); // F32
            b.extend(offset.to_le_bytes());
            offset += elements * 4;
        }
        while !b.len().is_multiple_of(32) {
            b.push(0);
        }
        b
    }

    /// Values that break unchecked arithmetic: zero, one, powers of two at the word boundaries, maxima.
    const HOSTILE: [u64; 8] = [
        0,
        1,
        1 << 31,
        1 << 32,
        1 << 62,
        1 << 63,
        u64::MAX - 1,
        u64::MAX,
    ];

    /// Parse and use everything a caller reads from a header; the test fails on any panic.
    fn exercise(bytes: &[u8]) -> Result<(), GgufError> {
        let h = parse_header(&mut Cursor::new(bytes))?;
        let _ = (
            h.parameter_count(),
            h.required_file_size(),
            h.context_length(),
            h.quantization(),
            h.architecture(),
        );
        for t in &h.tensors {
            assert!(
                t.elements().is_some(),
                "a parsed tensor always has an element count: {t:?}"
            );
        }
        Ok(())
    }

    #[test]
    fn random_truncated_and_hostile_headers_never_panic() {
        let mut rng = Rng(0x0f0e_2026);
        let (mut cases, mut parsed, mut corrupt) = (0u64, 0u64, 0u64);
        let mut tally = |r: Result<(), GgufError>| {
            cases += 1;
            match r {
                Ok(()) => parsed += 1,
                Err(GgufError::Corrupt(_) | GgufError::BadMagic | GgufError::BadVersion(_)) => {
                    corrupt += 1
                }
                Err(GgufError::Io(e)) => panic!("in-memory parsing cannot fail with I/O: {e}"),
            }
        };
        // 1. Every prefix of a few valid headers: truncation anywhere is a typed error, never a panic.
        for n in 0..4 {
            let h = valid_header(&mut rng, n);
            assert!(exercise(&h).is_ok(), "the generator writes valid headers");
            for cut in 0..h.len() {
                tally(exercise(&h[..cut]));
            }
        }
        // 2. Valid headers with 64-bit words overwritten by hostile values (counts, lengths, dims, offsets).
        for _ in 0..50_000 {
            let n = 1 + rng.below(3);
            let mut h = valid_header(&mut rng, n);
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(h.len() as u64 - 8) as usize;
                let v = HOSTILE[rng.below(HOSTILE.len() as u64) as usize];
                h[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            tally(exercise(&h));
        }
        // 3. Valid headers with random bytes flipped, then random garbage after a valid preamble.
        for _ in 0..30_000 {
            let n = rng.below(3);
            let mut h = valid_header(&mut rng, n);
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(h.len() as u64) as usize;
                h[at] ^= 1 << rng.below(8);
            }
            tally(exercise(&h));
        }
        for _ in 0..30_000 {
            let mut h = b"GGUF".to_vec();
            h.extend(3u32.to_le_bytes());
            let len = rng.below(256) as usize;
            h.extend((0..len).map(|_| {
                if rng.below(4) == 0 {
                    0
                } else {
                    rng.next() as u8
                }
            }));
            tally(exercise(&h));
        }
        assert!(cases >= 100_000, "only {cases} cases");
        assert!(
            parsed > 0 && corrupt > 0,
            "both outcomes are exercised: {parsed} parsed, {corrupt} refused"
        );
        eprintln!(
            "gguf fuzz: {cases} cases, {parsed} parsed, {corrupt} refused with a typed error"
        );
    }

    fn one_tensor(dims: &[u64], ggml_type: u32, offset: u64) -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend(1u64.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        string(&mut b, "w");
        b.extend((dims.len() as u32).to_le_bytes());
        for d in dims {
            b.extend(d.to_le_bytes());
        }
        b.extend(ggml_type.to_le_bytes());
        b.extend(offset.to_le_bytes());
        b
    }

    fn corrupt_reason(bytes: &[u8]) -> String {
        match parse_header(&mut Cursor::new(bytes)) {
            Err(GgufError::Corrupt(reason)) => reason,
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn overflowing_dimensions_sizes_and_offsets_are_corrupt() {
        // The probe from issue 14: dimensions whose product overflows.
        let r = corrupt_reason(&one_tensor(&[1 << 32, 1 << 32, 1 << 32], 0, 0));
        assert!(r.contains("\"w\"") && r.contains("overflow"), "{r}");
        // Elements fit, bytes (4 per F32 element) do not.
        let r = corrupt_reason(&one_tensor(&[1 << 62, 8], 0, 0));
        assert!(r.contains("overflow"), "{r}");
        let r = corrupt_reason(&one_tensor(&[u64::MAX / 2], 0, 0));
        assert!(r.contains("byte size overflows"), "{r}");
        // Offset at the end of the address space.
        let r = corrupt_reason(&one_tensor(&[4], 0, u64::MAX - 2));
        assert!(r.contains("beyond any file"), "{r}");
        // Unknown types are not sized, so a huge offset alone is not an overflow.
        assert!(
            parse_header(&mut Cursor::new(one_tensor(&[4], 999, u64::MAX)))
                .unwrap()
                .required_file_size()
                .is_none()
        );
    }

    #[test]
    fn counts_alignment_and_nesting_are_bounded() {
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend((MAX_ENTRIES).to_le_bytes()); // claims 16 M tensors, holds none: no 16 M-entry reservation
        b.extend(0u64.to_le_bytes());
        assert!(corrupt_reason(&b).contains("ends early"));

        let alignment = |v: u64| {
            let mut b = b"GGUF".to_vec();
            b.extend(3u32.to_le_bytes());
            b.extend(0u64.to_le_bytes());
            b.extend(1u64.to_le_bytes());
            string(&mut b, "general.alignment");
            b.extend(10u32.to_le_bytes());
            b.extend(v.to_le_bytes());
            b
        };
        assert!(corrupt_reason(&alignment(0)).contains("power of two"));
        assert!(corrupt_reason(&alignment(48)).contains("power of two"));
        // The largest power of two still fits; the data section then starts far beyond any real file,
        // which `inspect` reports as a truncated file.
        assert_eq!(
            parse_header(&mut Cursor::new(alignment(1 << 63)))
                .unwrap()
                .required_file_size(),
            Some(1 << 63)
        );
        assert_eq!(
            parse_header(&mut Cursor::new(alignment(64)))
                .unwrap()
                .data_offset,
            64
        );

        // Arrays of arrays of ...: bounded depth instead of a stack overflow.
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        b.extend(1u64.to_le_bytes());
        string(&mut b, "deep");
        b.extend(9u32.to_le_bytes());
        for _ in 0..100_000 {
            b.extend(9u32.to_le_bytes());
            b.extend(1u64.to_le_bytes());
        }
        assert!(corrupt_reason(&b).contains("nested"));
    }

    #[test]
    fn a_non_gguf_file_is_refused_without_echoing_its_bytes() {
        for bytes in [&b"root:x:0:0:root:/root:/bin/bash\n"[..], b"ro", b""] {
            let err = parse_header(&mut Cursor::new(bytes)).unwrap_err();
            assert!(matches!(err, GgufError::BadMagic), "{err:?}");
            let shown = err.to_string();
            for leak in ["72", "6f", "root", "["] {
                assert!(!shown.contains(leak), "{shown:?} echoes the file ({leak})");
            }
        }
    }
}
