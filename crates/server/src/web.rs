//! The web page, embedded in the binary: plain HTML, CSS and JS from `crates/server/web/` (no CDN, no build).

use axum::http::header;
use axum::response::{IntoResponse, Response};

const CSP: &str = "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

fn page(ctype: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, ctype), (header::CONTENT_SECURITY_POLICY, CSP), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

pub async fn index() -> Response {
    page("text/html; charset=utf-8", include_str!("../web/index.html"))
}

pub async fn app_js() -> Response {
    page("text/javascript; charset=utf-8", include_str!("../web/app.js"))
}

pub async fn style_css() -> Response {
    page("text/css; charset=utf-8", include_str!("../web/style.css"))
}

// The course view's own assets (web/course.js renders the guides and the local self-check).
pub async fn course_js() -> Response {
    page("text/javascript; charset=utf-8", include_str!("../web/course.js"))
}

pub async fn course_css() -> Response {
    page("text/css; charset=utf-8", include_str!("../web/course.css"))
}

// The Evaluation panel (reports from `cargo xtask eval`).
pub async fn eval_js() -> Response {
    page("text/javascript; charset=utf-8", include_str!("../web/eval.js"))
}
