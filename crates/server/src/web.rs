//! The web page, embedded in the binary: plain HTML, CSS and JavaScript modules from `crates/server/web/` (no CDN,
//! no build step; the browser resolves the modules' `import`s against these same paths).

use axum::http::header;
use axum::response::{IntoResponse, Response};

const CSP: &str = "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// One file of the page: where it is served, its content type and its bytes.
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static str,
}

macro_rules! asset {
    ($path:literal, $ctype:expr, $file:literal) => {
        Asset {
            path: $path,
            content_type: $ctype,
            body: include_str!(concat!("../web/", $file)),
        }
    };
}

/// Every file of the page. `app.js` starts the runner panel; `course.js` (with `grades.js`, its class view),
/// `eval.js`, `chapter.js` and `lab.js` are the other panels;
/// the rest are the modules they import.
pub const ASSETS: &[Asset] = &[
    asset!("/", HTML, "index.html"),
    asset!("/style.css", CSS, "style.css"),
    asset!("/course.css", CSS, "course.css"),
    asset!("/chapter.css", CSS, "chapter.css"),
    asset!("/grades.css", CSS, "grades.css"),
    asset!("/app.js", JS, "app.js"),
    asset!("/course.js", JS, "course.js"),
    asset!("/grades.js", JS, "grades.js"),
    asset!("/eval.js", JS, "eval.js"),
    asset!("/chapter.js", JS, "chapter.js"),
    asset!("/lab.js", JS, "lab.js"),
    asset!("/chart.js", JS, "chart.js"),
    asset!("/dom.js", JS, "dom.js"),
    asset!("/i18n.js", JS, "i18n.js"),
    asset!("/lang.js", JS, "lang.js"),
    asset!("/markdown.js", JS, "markdown.js"),
    asset!("/sources.js", JS, "sources.js"),
    asset!("/state.js", JS, "state.js"),
    asset!("/timeline.js", JS, "timeline.js"),
    asset!("/written.js", JS, "written.js"),
];

impl Asset {
    pub fn response(&self) -> Response {
        let headers = [
            (header::CONTENT_TYPE, self.content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::CACHE_CONTROL, "no-cache"),
        ];
        (headers, self.body).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::ASSETS;

    /// A module the page imports but the binary does not serve would fail only in a browser; a file in `web/`
    /// that is not served is dead. Both are caught here from the files themselves.
    #[test]
    fn every_web_file_is_served_and_every_import_resolves() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        on_disk.sort();
        let mut served: Vec<String> = ASSETS
            .iter()
            .map(|a| {
                if a.path == "/" {
                    "index.html".to_string()
                } else {
                    a.path[1..].to_string()
                }
            })
            .collect();
        served.sort();
        assert_eq!(on_disk, served);
        for asset in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            for line in asset.body.lines().filter(|l| l.starts_with("import ")) {
                let target = line
                    .rsplit("from '.")
                    .next()
                    .unwrap()
                    .trim_end_matches("';");
                assert!(
                    ASSETS.iter().any(|a| a.path == target),
                    "{} imports {target}, which is not served",
                    asset.path
                );
            }
        }
    }
}
