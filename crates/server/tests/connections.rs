//! The connection layer under load (issue 23, item 3): 2,000 idle connections while a real scripted run
//! completes, half-sent requests and stalled bodies, and the connection limit. Its own test binary: it
//! changes the process's open-file limit.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::project_root;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn set_soft_nofile(soft: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    let soft = soft.min(lim.rlim_max);
    let set = libc::rlimit {
        rlim_cur: soft,
        rlim_max: lim.rlim_max,
    };
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &set) }, 0);
    lim.rlim_max
}

struct Served {
    addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    _runs: tempfile::TempDir,
}

impl Served {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.task.await.unwrap().unwrap();
    }
}

async fn serve(edit: impl FnOnce(&mut forge_server::ServerConfig)) -> Served {
    let runs = tempfile::tempdir().unwrap();
    let mut config = forge_server::ServerConfig::new(project_root());
    config.runs_dir = runs.path().join(".runs");
    config.enable_test_policies = true;
    edit(&mut config);
    let provider: Arc<dyn forge_server::ModelProvider> =
        Arc::new(forge_server::UnavailableProvider {
            reason: "none".into(),
        });
    let service = forge_server::Service::start(config, provider).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(service.serve(listener, async {
        let _ = rx.await;
    }));
    Served {
        addr,
        stop: Some(tx),
        task,
        _runs: runs,
    }
}

/// The load test: 2,000 connections opened and left idle hold the service while a scripted run
/// starts, writes its events and completes, and the page is still served. The process starts with a
/// soft open-file limit of 3,000 (a desktop default is 1,024): before the fix, the connections took
/// every descriptor, the next event append failed and the run ended `failed/store_write_failed` (or the
/// request could not even be made).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_idle_connections_do_not_fail_a_run_and_the_page_answers() {
    let hard = set_soft_nofile(3000);
    assert!(
        hard >= 4500,
        "the hard open-file limit ({hard}) is too low for this test"
    );
    let s = serve(|_| {}).await;
    let mut idle = Vec::with_capacity(2000);
    for _ in 0..2000 {
        idle.push(
            tokio::net::TcpStream::connect(s.addr)
                .await
                .expect("idle connection"),
        );
    }
    let client = reqwest::Client::new();
    let base = format!("http://{}", s.addr);
    let accepted: Value = client
        .post(format!("{base}/agent/runs"))
        .json(&json!({ "policy": "scripted:fixtures/happy.json" }))
        .send()
        .await
        .expect("the run request gets through")
        .json()
        .await
        .unwrap();
    let id = accepted["id"].as_str().expect("a run id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    let snap = loop {
        let snap: Value = client
            .get(format!("{base}/agent/runs/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if snap["terminal"] == true {
            break snap;
        }
        assert!(Instant::now() < deadline, "run did not finish: {snap}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(snap["status"], "completed", "{}", snap["result"]);
    let page = client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains("<html"));
    assert_eq!(idle.len(), 2000);
    drop(idle);
    s.stop().await;
}

async fn read_all(stream: &mut tokio::net::TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Half-sent request heads are closed after the header-read timeout, a body that stalls gets 408, and
/// past the connection limit a new request waits only until those slots free, then is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_time_out_stalled_bodies_get_408_and_the_limit_holds() {
    let s = serve(|c| {
        c.header_read_timeout = Duration::from_millis(300);
        c.body_timeout = Duration::from_millis(300);
        c.max_connections = 16;
    })
    .await;
    let mut half = Vec::new();
    for _ in 0..16 {
        let mut c = tokio::net::TcpStream::connect(s.addr).await.unwrap();
        c.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .unwrap();
        half.push(c);
    }
    // Every slot is held by a half-sent head; the next request is served once the timeout frees them.
    let client = reqwest::Client::new();
    let status = tokio::time::timeout(
        Duration::from_secs(10),
        client.get(format!("http://{}/status", s.addr)).send(),
    )
    .await
    .expect("served once the half-sent heads time out")
    .unwrap();
    assert_eq!(status.status().as_u16(), 200);
    for mut c in half {
        let got = tokio::time::timeout(Duration::from_secs(10), read_all(&mut c))
            .await
            .expect("a half-sent request head is closed by the server");
        assert!(
            !got.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&got)
        );
    }
    let mut c = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    c.write_all(b"POST /agent/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{").await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), read_all(&mut c))
        .await
        .expect("a stalled body is answered, not held");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("body_timeout"), "{text}");
    s.stop().await;
}
