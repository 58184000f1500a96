//! A small pure-Rust reader for GGUF headers: metadata, tensor table and the byte extent the tensors need.
//!
//! It is not a model loader (llama.cpp does that in `engine`); it lets `inspect` describe and sanity-check a
//! file in milliseconds without loading 500 MB of weights, and it needs no llama.cpp to build.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// A metadata value, reduced to what inspection needs (large arrays keep only their length).
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(String),
    /// Arrays (tokenizer vocabularies etc.) are summarised by element type and length.
    Array { len: u64 },
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
    pub fn elements(&self) -> u64 {
        self.dims.iter().product()
    }
    /// Bytes this tensor occupies, when its ggml type is known.
    pub fn bytes(&self) -> Option<u64> {
        let (block, size) = ggml_type_block(self.ggml_type)?;
        Some(self.elements().div_ceil(block) * size)
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
    pub fn parameter_count(&self) -> u64 {
        self.tensors.iter().map(TensorInfo::elements).sum()
    }
    /// The smallest file size that holds every tensor, or None when a tensor has an unknown ggml type.
    pub fn required_file_size(&self) -> Option<u64> {
        let mut end = self.data_offset;
        for t in &self.tensors {
            end = end.max(self.data_offset + t.offset + t.bytes()?);
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
    #[error("not a GGUF file (magic bytes {0:02x?}, expected \"GGUF\")")]
    BadMagic([u8; 4]),
    #[error("unsupported GGUF version {0} (supported: 2, 3)")]
    BadVersion(u32),
    #[error("corrupt GGUF header: {0}")]
    Corrupt(String),
}

/// Guards against absurd counts in a corrupt header before we allocate.
const MAX_STRING: u64 = 64 << 20;
const MAX_ENTRIES: u64 = 1 << 24;

pub fn read_header(path: &Path) -> Result<GgufHeader, GgufError> {
    let file = File::open(path)?;
    let mut r = BufReader::with_capacity(1 << 16, file);
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic)?;
    if &magic != b"GGUF" {
        return Err(GgufError::BadMagic(magic));
    }
    let version = read_u32(&mut r)?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::BadVersion(version));
    }
    let n_tensors = read_u64(&mut r)?;
    let n_kv = read_u64(&mut r)?;
    if n_tensors > MAX_ENTRIES || n_kv > MAX_ENTRIES {
        return Err(GgufError::Corrupt(format!("{n_tensors} tensors / {n_kv} metadata entries")));
    }
    let mut metadata = BTreeMap::new();
    for _ in 0..n_kv {
        let key = read_string(&mut r)?;
        let ty = read_u32(&mut r)?;
        let value = read_value(&mut r, ty)?;
        metadata.insert(key, value);
    }
    let mut tensors = Vec::with_capacity(n_tensors as usize);
    for _ in 0..n_tensors {
        let name = read_string(&mut r)?;
        let n_dims = read_u32(&mut r)?;
        if n_dims > 8 {
            return Err(GgufError::Corrupt(format!("tensor {name} has {n_dims} dimensions")));
        }
        let dims = (0..n_dims).map(|_| read_u64(&mut r)).collect::<Result<Vec<_>, _>>()?;
        let ggml_type = read_u32(&mut r)?;
        let offset = read_u64(&mut r)?;
        tensors.push(TensorInfo { name, dims, ggml_type, offset });
    }
    let alignment = metadata.get("general.alignment").and_then(MetaValue::as_u64).unwrap_or(32).max(1);
    let pos = r.stream_position()?;
    let data_offset = pos.div_ceil(alignment) * alignment;
    Ok(GgufHeader { version, metadata, tensors, data_offset })
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
    let mut buf = vec![0u8; len as usize];
    r.read_exact(&mut buf).map_err(truncated)?;
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

fn read_value<R: Read + Seek>(r: &mut R, ty: u32) -> Result<MetaValue, GgufError> {
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
            let elem = read_u32(r)?;
            let len = read_u64(r)?;
            if len > MAX_ENTRIES * 4 {
                return Err(GgufError::Corrupt(format!("array of {len} elements")));
            }
            if let Some(w) = scalar_width(elem) {
                // Skip fixed-width arrays in one seek instead of element by element.
                r.seek(SeekFrom::Current((w * len) as i64))?;
            } else {
                for _ in 0..len {
                    read_value(r, elem)?;
                }
            }
            MetaValue::Array { len }
        }
        10 => MetaValue::Int(u64::from_le_bytes(read_n(r)?) as i128),
        11 => MetaValue::Int(i64::from_le_bytes(read_n(r)?) as i128),
        12 => MetaValue::Float(f64::from_le_bytes(read_n(r)?)),
        other => return Err(GgufError::Corrupt(format!("unknown metadata value type {other}"))),
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
        0 => (1, 4),    // F32
        1 => (1, 2),    // F16
        2 => (32, 18),  // Q4_0
        3 => (32, 20),  // Q4_1
        6 => (32, 22),  // Q5_0
        7 => (32, 24),  // Q5_1
        8 => (32, 34),  // Q8_0
        9 => (32, 36),  // Q8_1
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
