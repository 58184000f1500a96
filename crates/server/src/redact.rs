//! Last-line redaction for everything the service stores or serves from a run: no reasoning-like keys,
//! no raw model text, no absolute paths.
//!
//! The runtime already keeps these out of its trace; this pass makes the guarantee hold at the HTTP
//! boundary too, whatever a future event carries. It does not judge content beyond that.

use serde_json::Value;

/// Keys dropped wherever they appear (compared lower-case).
const DROPPED_KEYS: &[&str] = &[
    "thought",
    "thoughts",
    "reasoning",
    "analysis",
    "chain_of_thought",
    "scratchpad",
    "inner_monologue",
    "rationale",
    "raw_text",
    "raw_output",
    "raw_model_text",
    "completion",
    "prompt",
];

pub fn is_dropped_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    DROPPED_KEYS.contains(&k.as_str()) || k.contains("reasoning") || k.contains("thought")
}

/// Redact a JSON value in place. `roots` are absolute directories to show as relative (e.g. the project
/// root, `.runs/`); any other absolute path is replaced by `<path>/basename`.
pub fn redact(value: &mut Value, roots: &[String]) {
    match value {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().filter(|k| is_dropped_key(k)).cloned().collect();
            for k in keys {
                map.remove(&k);
            }
            for v in map.values_mut() {
                redact(v, roots);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact(v, roots)),
        Value::String(s) => {
            if let Some(r) = redact_paths(s, roots) {
                *s = r;
            }
        }
        _ => {}
    }
}

pub fn redacted(mut value: Value, roots: &[String]) -> Value {
    redact(&mut value, roots);
    value
}

/// `scheme://user:secret@host` → `scheme://<credentials>@host`, for every URL in `s`.
pub fn strip_url_credentials(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail
            .find(['/', '?', '#', ' ', '"', '\'', '\t', '\n', '`', ')', '>'])
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(userinfo_end) => {
                out.push_str("<credentials>");
                out.push_str(&authority[userinfo_end..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Returns the rewritten string only when something changed.
fn redact_paths(s: &str, roots: &[String]) -> Option<String> {
    let mut out = strip_url_credentials(s);
    for root in roots.iter().filter(|r| r.len() > 1) {
        let with_slash = format!("{}/", root.trim_end_matches('/'));
        out = out.replace(&with_slash, "");
        out = out.replace(root.as_str(), ".");
    }
    // Any remaining absolute Unix path token (/x/y...) or Windows drive path.
    let mut result = String::with_capacity(out.len());
    let mut changed = out != s;
    let chars: Vec<char> = out.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let boundary = i == 0
            || matches!(
                chars[i - 1],
                ' ' | '"'
                    | '\''
                    | '('
                    | '='
                    | ':'
                    | ','
                    | '['
                    | '\t'
                    | '\n'
                    | '`'
                    | ';'
                    | '{'
                    | '<'
            );
        let unix = chars[i] == '/'
            && chars
                .get(i + 1)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '_');
        let win = chars[i].is_ascii_alphabetic()
            && chars.get(i + 1) == Some(&':')
            && chars.get(i + 2) == Some(&'\\');
        if boundary && (unix || win) {
            let start = i;
            while i < chars.len()
                && !matches!(
                    chars[i],
                    ' ' | '"' | '\'' | ')' | ',' | ']' | '\t' | '\n' | '`' | ';' | '}' | '>'
                )
            {
                i += 1;
            }
            let token: String = chars[start..i].iter().collect();
            let segments = token.split(['/', '\\']).filter(|p| !p.is_empty()).count();
            if segments >= 2 {
                let base = token.rsplit(['/', '\\']).next().unwrap_or("");
                result.push_str("<path>/");
                result.push_str(base);
                changed = true;
            } else {
                result.push_str(&token);
            }
            continue;
        }
        result.push(chars[i]);
        i += 1;
    }
    changed.then_some(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drops_reasoning_keys_and_absolute_paths() {
        let v = json!({
            "phase": "decision.accepted",
            "reasoning": "secret", "data": {"Thought": "x", "raw_text": "{...}", "ok": 1,
            "msg": "cannot open /home/me/models/q.gguf (see /work/main/fixtures/x.json)", "route": "/"}
        });
        let r = redacted(v, &["/work/main".into()]);
        assert_eq!(
            r,
            json!({"phase": "decision.accepted", "data": {"ok": 1,
                "msg": "cannot open <path>/q.gguf (see fixtures/x.json)", "route": "/"}})
        );
    }

    /// Issue 23, item 7: paths after `` ` ``, `;`, `{`, `<` and credentials in URLs.
    #[test]
    fn paths_after_backticks_semicolons_braces_and_angles_and_url_credentials_are_redacted() {
        let r = redacted(
            json!("see `/home/me/a.txt`; x;/etc/shadow {/root/.ssh/id_rsa} </var/lib/secret>"),
            &[],
        );
        assert_eq!(
            r,
            json!("see `<path>/a.txt`; x;<path>/shadow {<path>/id_rsa} <<path>/secret>")
        );
        let r = redacted(
            json!("http://alice:s3cret@gpu.lan:8080/v1 and https://tok@h/x"),
            &[],
        );
        assert_eq!(
            r,
            json!("http://<credentials>@gpu.lan:8080/v1 and https://<credentials>@h/x")
        );
        assert_eq!(
            strip_url_credentials("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080"
        );
    }
}
