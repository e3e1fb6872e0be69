//! The OpenAI-compatible summarizer against a server this test runs on loopback.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use grove::summary::{AbortSignal, OpenAiSummarizer, SummarizeError, Summarizer, SummaryRequest};

/// Serves one request with `status` and `body`; returns what it received (head, body).
fn serve_once(
    status: &'static str,
    body: &'static str,
) -> (String, std::thread::JoinHandle<(String, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            head.push_str(&line);
        }
        let mut buf = vec![0u8; length];
        reader.read_exact(&mut buf).unwrap();
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        (head, String::from_utf8(buf).unwrap())
    });
    (base, handle)
}

fn request() -> SummaryRequest {
    SummaryRequest {
        system: "be brief".into(),
        prompt: "<conversation>…".into(),
        max_tokens: 2048,
    }
}

#[test]
fn posts_chat_completions_and_maps_usage() {
    let (base, server) = serve_once(
        "200 OK",
        r###"{"choices":[{"message":{"role":"assistant","content":"## Goal\nship it"}}],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}"###,
    );
    std::env::set_var("GROVE_TEST_OPENAI_KEY", "sk-test");
    let client = OpenAiSummarizer::new(&base, "gpt-test", "GROVE_TEST_OPENAI_KEY");
    let r = client.summarize(&request(), &AbortSignal::new()).unwrap();
    assert_eq!(r.text, "## Goal\nship it");
    let usage: serde_json::Value = serde_json::from_str(r.usage.as_deref().unwrap()).unwrap();
    assert_eq!(
        (
            usage["input"].as_u64(),
            usage["output"].as_u64(),
            usage["totalTokens"].as_u64()
        ),
        (Some(11), Some(7), Some(18))
    );
    let (head, body) = server.join().unwrap();
    assert!(head.starts_with("POST /v1/chat/completions "), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("authorization: bearer sk-test"),
        "{head}"
    );
    let sent: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(sent["model"], "gpt-test");
    assert_eq!(sent["max_tokens"], 2048);
    assert_eq!(sent["messages"][0]["role"], "system");
    assert_eq!(sent["messages"][1]["content"], "<conversation>…");
}

#[test]
fn an_error_status_is_a_failure_with_the_body() {
    let (base, server) = serve_once("500 Internal Server Error", r#"{"error":"overloaded"}"#);
    let client = OpenAiSummarizer::new(&base, "m", "GROVE_TEST_UNSET_KEY");
    let err = client
        .summarize(&request(), &AbortSignal::new())
        .unwrap_err();
    assert!(
        matches!(err, SummarizeError::Failed(ref m) if m.contains("500") && m.contains("overloaded")),
        "{err:?}"
    );
    server.join().unwrap();
}
