//! The blocking HTTP client the server backends share — the only module that touches `ureq`: JSON requests,
//! server-sent-event streams read on a worker thread, and every failure as a typed `HttpError`.
//!
//! Not a backend: it knows no endpoint's meaning. Streams are how a generation can be abandoned: the caller
//! polls its own cancel flag and deadline between events and simply drops the stream; the worker notices at
//! the server's next event and closes the connection, which is what makes llama-server stop generating.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How to reach an inference server. Plain data (serde), so a backend can be built from a config value on
/// any thread.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// `http://HOST:PORT` (a path prefix such as `/v1` is allowed where the backend says so).
    pub url: String,
    /// Time allowed to open the TCP connection.
    #[serde(default = "default_connect_ms")]
    pub connect_timeout_ms: u64,
    /// Longest silence tolerated while waiting for the server's next bytes. Generous by default: a server
    /// sends nothing while a request waits for a free slot or its prompt is processed.
    #[serde(default = "default_stall_ms")]
    pub stall_timeout_ms: u64,
    /// Name of an environment variable holding a bearer token (never the token itself, so configs and
    /// traces can be shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
}

fn default_connect_ms() -> u64 {
    3_000
}
fn default_stall_ms() -> u64 {
    120_000
}

impl HttpConfig {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            connect_timeout_ms: default_connect_ms(),
            stall_timeout_ms: default_stall_ms(),
            api_key_env: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HttpError {
    #[error("invalid server URL {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url} sent nothing for {secs:.1} s")]
    Stalled { url: String, secs: f64 },
    #[error("{url} answered HTTP {status}: {message}")]
    Status {
        url: String,
        status: u16,
        message: String,
    },
    #[error("{url} sent malformed {what}: {detail}")]
    Malformed {
        url: String,
        what: &'static str,
        detail: String,
    },
    #[error("{url} closed the stream before its final event")]
    Closed { url: String },
    #[error("{url}: {reason}")]
    Io { url: String, reason: String },
}

/// The longest server-sent-event line, and event, accepted (a token event is a few hundred bytes).
pub const MAX_SSE_LINE_BYTES: usize = 1 << 20;

/// One line (without `\n` / `\r\n`) of at most `max` bytes, `None` at the end of the stream. A longer
/// line is an `InvalidData` error after reading at most `max + 1` bytes of it: a server that never sends a
/// newline cannot grow this process's memory.
pub fn read_capped_line(reader: &mut impl BufRead, max: usize) -> std::io::Result<Option<String>> {
    let mut line = Vec::new();
    let read = reader
        .by_ref()
        .take(max as u64 + 1)
        .read_until(b'\n', &mut line)?;
    if read == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    } else if line.len() > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a line longer than {max} bytes"),
        ));
    }
    String::from_utf8(line).map(Some).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "a line that is not UTF-8")
    })
}

/// One item of a server-sent-event stream.
#[derive(Debug, Clone, PartialEq)]
pub enum SseItem {
    /// A `data:` payload parsed as JSON.
    Data(Value),
    /// `data: [DONE]` (OpenAI-style end marker).
    Done,
    /// A comment line (`: ping`) — proof the server is alive, nothing else.
    KeepAlive,
}

/// A running stream: events arrive from a worker thread. Dropping it abandons the request.
pub struct SseStream {
    rx: Receiver<Result<SseItem, HttpError>>,
    url: String,
    stall: Duration,
    last_event: Instant,
}

/// What `SseStream::next` saw within its poll interval.
#[derive(Debug)]
pub enum Poll {
    Item(SseItem),
    /// Nothing yet; the caller checks its own stop conditions and polls again.
    Pending,
    /// The stream ended cleanly (connection closed after the body).
    End,
}

impl SseStream {
    /// Wait up to `interval` for the next item; a silence longer than the stall timeout is an error.
    pub fn next(&mut self, interval: Duration) -> Result<Poll, HttpError> {
        match self.rx.recv_timeout(interval) {
            Ok(Ok(item)) => {
                self.last_event = Instant::now();
                Ok(Poll::Item(item))
            }
            Ok(Err(e)) => Err(e),
            Err(RecvTimeoutError::Timeout) => {
                let silent = self.last_event.elapsed();
                if silent > self.stall {
                    Err(HttpError::Stalled {
                        url: self.url.clone(),
                        secs: silent.as_secs_f64(),
                    })
                } else {
                    Ok(Poll::Pending)
                }
            }
            Err(RecvTimeoutError::Disconnected) => Ok(Poll::End),
        }
    }
}

/// A client for one server: base URL, timeouts, optional bearer token.
#[derive(Clone)]
pub struct HttpClient {
    agent: ureq::Agent,
    base: String,
    stall: Duration,
    /// Budget for small JSON calls (`/health`, `/props`, `/apply-template`): they answer at once when the
    /// server is healthy, so waiting the whole stall timeout for them would only delay a failure.
    quick: Duration,
    bearer: Option<String>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("base", &self.base)
            .field("stall", &self.stall)
            .finish_non_exhaustive()
    }
}

/// Largest JSON body read from a non-streaming answer or an error.
const MAX_JSON_BYTES: u64 = 8 << 20;

impl HttpClient {
    pub fn new(config: &HttpConfig) -> Result<Self, HttpError> {
        let bad = |reason: &str| HttpError::BadUrl {
            url: config.url.clone(),
            reason: reason.into(),
        };
        let rest = config
            .url
            .strip_prefix("http://")
            .map(|r| r.trim_end_matches('/'))
            .ok_or_else(|| {
                bad(if config.url.starts_with("https://") {
                    "https is not supported (no TLS in this build); use http or a local proxy"
                } else {
                    "must start with http://"
                })
            })?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(bad("no host"));
        }
        let url = format!("http://{rest}");
        if config.connect_timeout_ms == 0 || config.stall_timeout_ms == 0 {
            return Err(bad("timeouts must be above 0 ms"));
        }
        let bearer = match &config.api_key_env {
            None => None,
            Some(var) => Some(
                std::env::var(var)
                    .map_err(|_| bad(&format!("api_key_env names {var}, which is not set")))?,
            ),
        };
        let stall = Duration::from_millis(config.stall_timeout_ms);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_connect(Some(Duration::from_millis(config.connect_timeout_ms)))
            .timeout_per_read(Some(stall))
            .timeout_per_write(Some(stall))
            .http_status_as_error(false)
            // Every request gets a connection of its own. A pooled connection can be closed by the server
            // at any moment after its last answer (an idle timeout, or an end after a streamed answer that
            // the headers never announced); a request written onto it just then fails with "Peer
            // disconnected" before any answer. That failed CI twice as a spurious model_unavailable, the
            // second time with idle connections already dropped after 2 s. A loopback connect costs well
            // under a millisecond against seconds of inference, so nothing is pooled.
            .max_idle_connections(0)
            // An inference server is addressed directly; a proxy from the environment would only get in the way.
            .proxy(None)
            .build()
            .into();
        let quick = (Duration::from_millis(config.connect_timeout_ms) + Duration::from_secs(10))
            .min(stall.max(Duration::from_secs(1)));
        Ok(Self {
            agent,
            base: url,
            stall,
            quick,
            bearer,
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// GET `path` and parse the JSON answer.
    pub fn get_json(&self, path: &str) -> Result<Value, HttpError> {
        let url = self.url(path);
        let mut req = self
            .agent
            .get(&url)
            .config()
            .timeout_global(Some(self.quick))
            .build();
        if let Some(b) = &self.bearer {
            req = req.header("authorization", format!("Bearer {b}"));
        }
        let resp = req
            .call()
            .map_err(|e| transport_error(&url, e, self.stall))?;
        json_body(&url, resp, self.stall)
    }

    /// POST a JSON body to `path` and parse the JSON answer.
    pub fn post_json(&self, path: &str, body: &Value) -> Result<Value, HttpError> {
        let url = self.url(path);
        let mut req = self
            .agent
            .post(&url)
            .config()
            .timeout_global(Some(self.quick))
            .build()
            .header("content-type", "application/json");
        if let Some(b) = &self.bearer {
            req = req.header("authorization", format!("Bearer {b}"));
        }
        let resp = req
            .send(body.to_string().as_bytes())
            .map_err(|e| transport_error(&url, e, self.quick))?;
        json_body(&url, resp, self.quick)
    }

    /// `post_json` on a worker thread while `stop()` is polled every `interval`: `Ok(None)` when the caller
    /// stopped waiting (the answer, if it ever comes, is dropped).
    pub fn post_json_polled(
        &self,
        path: &str,
        body: &Value,
        interval: Duration,
        stop: &mut dyn FnMut() -> bool,
    ) -> Result<Option<Value>, HttpError> {
        let (tx, rx) = mpsc::sync_channel(1);
        let client = self.clone();
        let (path_owned, body) = (path.to_string(), body.clone());
        std::thread::Builder::new()
            .name("forge-http".into())
            .spawn(move || {
                let _ = tx.send(client.post_json(&path_owned, &body));
            })
            .expect("spawn the HTTP thread");
        loop {
            if stop() {
                return Ok(None);
            }
            match rx.recv_timeout(interval) {
                Ok(result) => return result.map(Some),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(HttpError::Closed {
                        url: self.url(path),
                    });
                }
            }
        }
    }

    /// POST a JSON body to `path` and read the answer as server-sent events on a worker thread.
    pub fn post_sse(&self, path: &str, body: &Value) -> SseStream {
        let url = self.url(path);
        // A small buffer: the worker blocks on a full channel instead of reading ahead, so an abandoned
        // stream is noticed within a few events.
        let (tx, rx) = mpsc::sync_channel(16);
        let client = self.clone();
        let body = body.to_string();
        let worker_url = url.clone();
        std::thread::Builder::new()
            .name("forge-sse".into())
            .spawn(move || client.stream_worker(&worker_url, body, tx))
            .expect("spawn the SSE reader thread");
        SseStream {
            rx,
            url,
            stall: self.stall,
            last_event: Instant::now(),
        }
    }

    fn stream_worker(&self, url: &str, body: String, tx: SyncSender<Result<SseItem, HttpError>>) {
        let mut req = self
            .agent
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        if let Some(b) = &self.bearer {
            req = req.header("authorization", format!("Bearer {b}"));
        }
        let resp = match req.send(body.as_bytes()) {
            Ok(r) => r,
            Err(e) => {
                let _ = tx.send(Err(transport_error(url, e, self.stall)));
                return;
            }
        };
        if !resp.status().is_success() {
            let _ = tx.send(Err(status_error(url, resp)));
            return;
        }
        let mut reader = BufReader::new(resp.into_body().into_reader());
        let mut data = String::new();
        loop {
            let line = match read_capped_line(&mut reader, MAX_SSE_LINE_BYTES) {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    let _ = tx.send(Err(HttpError::Malformed {
                        url: url.to_string(),
                        what: "event stream",
                        detail: e.to_string(),
                    }));
                    return;
                }
                Err(e) => {
                    let _ = tx.send(Err(io_error(url, e, self.stall)));
                    return;
                }
            };
            if data.len() + line.len() > MAX_SSE_LINE_BYTES {
                let _ = tx.send(Err(HttpError::Malformed {
                    url: url.to_string(),
                    what: "event stream",
                    detail: format!("an event longer than {MAX_SSE_LINE_BYTES} bytes"),
                }));
                return;
            }
            let item = if line.is_empty() {
                // End of one event: its data lines joined.
                if data.is_empty() {
                    continue;
                }
                let payload = std::mem::take(&mut data);
                if payload.trim() == "[DONE]" {
                    Ok(SseItem::Done)
                } else {
                    serde_json::from_str(&payload)
                        .map(SseItem::Data)
                        .map_err(|e| HttpError::Malformed {
                            url: url.to_string(),
                            what: "event data",
                            detail: format!("{e} in {:?}", excerpt(&payload)),
                        })
                }
            } else if line.starts_with(':') {
                Ok(SseItem::KeepAlive)
            } else if let Some(rest) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
                continue;
            } else if line.starts_with("event:")
                || line.starts_with("id:")
                || line.starts_with("retry:")
            {
                continue;
            } else {
                Err(HttpError::Malformed {
                    url: url.to_string(),
                    what: "event stream",
                    detail: format!("unexpected line {:?}", excerpt(&line)),
                })
            };
            let stop = item.is_err();
            if tx.send(item).is_err() || stop {
                // The caller gave up (or we did): dropping the reader closes the connection.
                return;
            }
        }
        if !data.is_empty() {
            let payload = std::mem::take(&mut data);
            let item = serde_json::from_str(&payload)
                .map(SseItem::Data)
                .map_err(|e| HttpError::Malformed {
                    url: url.to_string(),
                    what: "event data",
                    detail: format!("{e} in {:?}", excerpt(&payload)),
                });
            let _ = tx.send(item);
        }
    }
}

fn excerpt(s: &str) -> String {
    let mut e: String = s.chars().take(120).collect();
    if e.len() < s.len() {
        e.push('…');
    }
    e
}

fn json_body(
    url: &str,
    resp: ureq::http::Response<ureq::Body>,
    stall: Duration,
) -> Result<Value, HttpError> {
    if !resp.status().is_success() {
        return Err(status_error(url, resp));
    }
    let mut text = String::new();
    resp.into_body()
        .into_with_config()
        .limit(MAX_JSON_BYTES)
        .reader()
        .read_to_string(&mut text)
        .map_err(|e| io_error(url, e, stall))?;
    serde_json::from_str(&text).map_err(|e| HttpError::Malformed {
        url: url.to_string(),
        what: "JSON",
        detail: format!("{e} in {:?}", excerpt(&text)),
    })
}

/// A non-2xx answer: the server's own message when it sent the usual `{"error": {"message": …}}`.
fn status_error(url: &str, resp: ureq::http::Response<ureq::Body>) -> HttpError {
    let status = resp.status().as_u16();
    let mut text = String::new();
    let _ = resp
        .into_body()
        .into_with_config()
        .limit(64 << 10)
        .reader()
        .read_to_string(&mut text);
    let message = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| {
            let e = v.get("error")?;
            e.get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| e.as_str().map(str::to_string))
        })
        .unwrap_or_else(|| excerpt(text.trim()));
    HttpError::Status {
        url: url.to_string(),
        status,
        message,
    }
}

fn transport_error(url: &str, e: ureq::Error, stall: Duration) -> HttpError {
    let secs = stall.as_secs_f64();
    let url = url.to_string();
    match e {
        ureq::Error::Timeout(ureq::Timeout::Connect | ureq::Timeout::Resolve) => {
            HttpError::Unreachable {
                url,
                reason: "connection timed out".into(),
            }
        }
        ureq::Error::Timeout(_) => HttpError::Stalled { url, secs },
        ureq::Error::HostNotFound => HttpError::Unreachable {
            url,
            reason: "host not found".into(),
        },
        ureq::Error::ConnectionFailed => HttpError::Unreachable {
            url,
            reason: "connection failed".into(),
        },
        ureq::Error::Io(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => HttpError::Unreachable {
                url,
                reason: "connection refused".into(),
            },
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
                HttpError::Stalled { url, secs }
            }
            _ => HttpError::Io {
                url,
                reason: io.to_string(),
            },
        },
        ureq::Error::BadUri(reason) => HttpError::BadUrl { url, reason },
        ureq::Error::Protocol(p) => HttpError::Malformed {
            url,
            what: "HTTP",
            detail: p.to_string(),
        },
        other => HttpError::Io {
            url,
            reason: other.to_string(),
        },
    }
}

fn io_error(url: &str, e: std::io::Error, stall: Duration) -> HttpError {
    let secs = stall.as_secs_f64();
    let url = url.to_string();
    // ureq reports its own timeouts and protocol errors through io::Error when reading a body.
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>()) {
        if matches!(inner, ureq::Error::Timeout(_)) {
            return HttpError::Stalled { url, secs };
        }
        if matches!(inner, ureq::Error::Protocol(_)) {
            return HttpError::Malformed {
                url,
                what: "HTTP",
                detail: inner.to_string(),
            };
        }
    }
    match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            HttpError::Stalled { url, secs }
        }
        std::io::ErrorKind::UnexpectedEof
        | std::io::ErrorKind::ConnectionReset
        | std::io::ErrorKind::ConnectionAborted => HttpError::Closed { url },
        _ => HttpError::Io {
            url,
            reason: e.to_string(),
        },
    }
}

#[cfg(test)]
mod capped_line_tests {
    use super::*;

    /// Issue 23, item 7: SSE lines from a model server are bounded.
    #[test]
    fn sse_lines_are_capped_and_line_endings_stripped() {
        let mut r = std::io::Cursor::new(b"data: 1\r\n\n: ping\nlast".to_vec());
        assert_eq!(
            read_capped_line(&mut r, 16).unwrap().as_deref(),
            Some("data: 1")
        );
        assert_eq!(read_capped_line(&mut r, 16).unwrap().as_deref(), Some(""));
        assert_eq!(
            read_capped_line(&mut r, 16).unwrap().as_deref(),
            Some(": ping")
        );
        assert_eq!(
            read_capped_line(&mut r, 16).unwrap().as_deref(),
            Some("last")
        );
        assert_eq!(read_capped_line(&mut r, 16).unwrap(), None);
        // An endless line: refused after max + 1 bytes, not read to the end.
        let mut endless = std::io::Read::take(std::io::repeat(b'x'), 1 << 30);
        let mut endless = std::io::BufReader::new(&mut endless);
        let e = read_capped_line(&mut endless, 1024).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
    }
}

#[cfg(test)]
mod connection_tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    /// Reads one request (head and `content-length` body) or returns false at end of stream.
    fn read_request(reader: &mut BufReader<TcpStream>) -> bool {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return false;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).is_ok()
    }

    /// A server that answers the first request on each connection with a complete chunked event stream,
    /// promising keep-alive, and then closes that connection a little later without answering the next
    /// request written onto it — what a server may do after any answer.
    fn closes_after_one_answer() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    if !read_request(&mut reader) {
                        return;
                    }
                    let event = "data: {\"n\": 1}\n\ndata: [DONE]\n\n";
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n{:x}\r\n{event}\r\n0\r\n\r\n",
                        event.len()
                    );
                    let _ = stream.flush();
                    std::thread::sleep(Duration::from_millis(300));
                });
            }
        });
        url
    }

    fn read_to_end(stream: &mut SseStream) -> Vec<String> {
        let mut items = Vec::new();
        loop {
            match stream.next(Duration::from_millis(50)) {
                Ok(Poll::Pending) => continue,
                Ok(Poll::End) => return items,
                Ok(Poll::Item(SseItem::Data(v))) => items.push(v.to_string()),
                Ok(Poll::Item(SseItem::Done)) => items.push("[DONE]".into()),
                Ok(Poll::Item(SseItem::KeepAlive)) => {}
                Err(e) => {
                    items.push(format!("error: {e}"));
                    return items;
                }
            }
        }
    }

    /// Two requests in a row, the second written while the server still holds the first connection open.
    /// Had the first connection been pooled, the second request would be written onto it and end with
    /// "Peer disconnected" before any answer (CI saw that as a spurious `model_unavailable`).
    #[test]
    fn a_request_never_rides_a_connection_an_earlier_answer_used() {
        let client = HttpClient::new(&HttpConfig::new(closes_after_one_answer())).unwrap();
        let body = serde_json::json!({"prompt": "hi"});
        for attempt in 1..=3 {
            let mut stream = client.post_sse("/v1/chat/completions", &body);
            let items = read_to_end(&mut stream);
            assert_eq!(items, ["{\"n\":1}", "[DONE]"], "request {attempt}");
        }
    }
}
