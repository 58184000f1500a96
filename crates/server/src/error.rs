//! The one error shape every refusal takes: HTTP status plus JSON `{code, message}` (and field errors).
//!
//! Not an axum module: `http/` turns an `ApiError` into a response; jobs and the example package
//! build them without knowing about axum.

/// One offending field of a request body (budgets, mode, temperature, ...): the runtime's type.
pub use runtime::FieldError;

/// A refusal with a stable snake_case `code`; `status` is the HTTP status code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
    pub fields: Vec<FieldError>,
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            fields: Vec::new(),
        }
    }
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(400, code, message)
    }
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(404, code, message)
    }
    pub fn invalid_fields(fields: Vec<FieldError>) -> Self {
        let list: Vec<String> = fields
            .iter()
            .map(|f| format!("{}: {}", f.field, f.message))
            .collect();
        Self {
            status: 400,
            code: "invalid_request",
            message: list.join("; "),
            fields,
        }
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "internal_error", message)
    }

    /// The JSON body: `{code, message}` plus `fields` when there are field errors.
    pub fn body(&self) -> serde_json::Value {
        let mut body = serde_json::json!({ "code": self.code, "message": self.message });
        if !self.fields.is_empty() {
            body["fields"] = serde_json::to_value(&self.fields).unwrap_or_default();
        }
        body
    }
}
