//! Networks as servers are deployed: HTTPS with a private CA (untrusted, then trusted through
//! SSL_CERT_FILE, SSL_CERT_DIR or --ca-cert), failing proxies named as such, and the hints for
//! each kind of connection failure. Everything stays on loopback.

mod util;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use util::*;

/// A CA and a server certificate for 127.0.0.1 signed by it, made with the openssl CLI.
fn make_ca(dir: &Path) -> bool {
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=turn test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]) && openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]) && openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
        "-out",
        "server.pem",
    ])
}

struct Https {
    child: Child,
    url: String,
}

impl Drop for Https {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn https_mock(dir: &Path) -> Https {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/https_mock.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg(dir.join("server.pem"))
        .arg(dir.join("server.key"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("the mock's port");
    Https {
        child,
        url: format!("https://127.0.0.1:{port}/v1"),
    }
}

/// turn with a clean environment (no proxies, no CA variables) asking `url`.
fn turn_at(ws: &Workspace, url: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_turn"));
    command
        .current_dir(&ws.dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &ws.dir)
        .env("XDG_STATE_HOME", ws.state())
        .env("OPENAI_BASE_URL", url)
        .args(["--no-session", "-m", "tls-model", "hi"])
        .stdin(Stdio::null());
    command
}

fn setup() -> Option<(Workspace, Https)> {
    let ws = Workspace::new();
    if !make_ca(&ws.dir) {
        eprintln!("skipped: the openssl CLI is not available to make a test CA");
        return None;
    }
    let server = https_mock(&ws.dir);
    Some((ws, server))
}

#[test]
fn a_private_ca_is_refused_with_a_hint_then_trusted_when_given() {
    let Some((ws, server)) = setup() else { return };
    // Untrusted: the certificate is named as the problem, with the way out; tried once.
    let out = util::run(turn_at(&ws, &server.url)).expect(1);
    assert_has(&out.stderr, "cannot connect securely to 127.0.0.1");
    assert_has(&out.stderr, "CA this machine does not trust");
    assert_has(&out.stderr, "--ca-cert FILE or SSL_CERT_FILE");
    assert!(!out.stderr.contains("retrying"), "{}", out.stderr);
    assert!(
        !out.stderr.contains("is the server running"),
        "{}",
        out.stderr
    );
    // SSL_CERT_FILE, as curl and OpenSSL read it.
    let mut command = turn_at(&ws, &server.url);
    command.env("SSL_CERT_FILE", ws.path("ca.pem"));
    let out = util::run(command).expect(0);
    assert_eq!(out.stdout.trim(), "hello over tls");
    // SSL_CERT_DIR: a directory of PEM files.
    std::fs::create_dir(ws.path("certs")).unwrap();
    std::fs::copy(ws.path("ca.pem"), ws.path("certs/test-ca.pem")).unwrap();
    let mut command = turn_at(&ws, &server.url);
    command.env("SSL_CERT_DIR", ws.path("certs"));
    util::run(command).expect(0);
    // --ca-cert.
    let mut command = turn_at(&ws, &server.url);
    command.arg("--ca-cert").arg(ws.path("ca.pem"));
    let out = util::run(command).expect(0);
    assert_eq!(out.stdout.trim(), "hello over tls");
}

#[test]
fn a_certificate_for_another_name_is_named_as_such() {
    let Some((ws, server)) = setup() else { return };
    // The certificate is for 127.0.0.1; asking for localhost does not match it.
    let url = server.url.replace("127.0.0.1", "localhost");
    let mut command = turn_at(&ws, &url);
    command.arg("--ca-cert").arg(ws.path("ca.pem"));
    let out = util::run(command).expect(1);
    assert_has(&out.stderr, "cannot connect securely to localhost");
    assert_has(&out.stderr, "not valid for name \"localhost\"");
    assert_has(
        &out.stderr,
        "hint: use the host name the certificate was issued for",
    );
}

#[test]
fn unusable_ca_files_are_usage_errors_naming_them() {
    let ws = Workspace::new();
    ws.write("junk.pem", "not a certificate\n");
    let url = "https://127.0.0.1:9/v1";
    let mut command = turn_at(&ws, url);
    command.args(["--ca-cert", "missing.pem"]);
    let out = util::run(command).expect(2);
    assert_has(&out.stderr, "--ca-cert missing.pem: cannot read it");
    let mut command = turn_at(&ws, url);
    command.args(["--ca-cert", "junk.pem"]);
    let out = util::run(command).expect(2);
    assert_has(&out.stderr, "--ca-cert junk.pem: no PEM certificate in it");
    let mut command = turn_at(&ws, url);
    command.env("SSL_CERT_FILE", ws.path("junk.pem"));
    let out = util::run(command).expect(2);
    assert_has(&out.stderr, "SSL_CERT_FILE");
    assert_has(&out.stderr, "junk.pem: no PEM certificate in it");
}

/// A port with nothing listening on it.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn a_failing_proxy_is_named_with_its_variable() {
    let ws = Workspace::new();
    // A proxy that is not there.
    let proxy = format!("http://user:hunter2@127.0.0.1:{}", closed_port());
    let mut command = turn_at(&ws, "https://127.0.0.1:9/v1");
    command.env("HTTPS_PROXY", &proxy);
    let out = util::run(command).expect(1);
    assert_has(&out.stderr, "the proxy http://***@127.0.0.1:");
    assert_has(&out.stderr, "(from HTTPS_PROXY) failed");
    assert_has(&out.stderr, "NO_PROXY");
    assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);
    // A proxy that turns the CONNECT down.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let refuser = std::thread::spawn(move || {
        for _ in 0..3 {
            let Ok((mut stream, _)) = listener.accept() else {
                return;
            };
            // Read the whole CONNECT request, answer, and let the client close first, so no
            // unread byte turns the close into a reset.
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let _ = stream.read(&mut buf);
        }
    });
    let mut command = turn_at(&ws, "https://127.0.0.1:9/v1");
    command.env("https_proxy", format!("http://127.0.0.1:{port}"));
    let out = util::run(command).expect(1);
    assert_has(
        &out.stderr,
        &format!("the proxy http://127.0.0.1:{port} (from https_proxy) failed"),
    );
    drop(refuser);
    // NO_PROXY leaves the proxy out: the error is then about the server itself.
    let mut command = turn_at(&ws, &format!("http://127.0.0.1:{}/v1", closed_port()));
    command
        .env("HTTP_PROXY", format!("http://127.0.0.1:{}", closed_port()))
        .env("NO_PROXY", "127.0.0.1");
    let out = util::run(command).expect(1);
    assert_has(&out.stderr, "nothing answers there: is the server running?");
    assert!(!out.stderr.contains("proxy"), "{}", out.stderr);
}

#[test]
fn each_connection_failure_gets_its_own_hint() {
    let ws = Workspace::new();
    let out = util::run(turn_at(
        &ws,
        &format!("http://127.0.0.1:{}/v1", closed_port()),
    ))
    .expect(1);
    assert_has(
        &out.stderr,
        "hint: nothing answers there: is the server running?",
    );
    // A server that closes the connection at once: it broke, rather than was refused.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(50) {
            drop(stream);
        }
    });
    let out = util::run(turn_at(&ws, &format!("http://127.0.0.1:{port}/v1"))).expect(1);
    assert_has(&out.stderr, "hint: the connection broke");
}

#[test]
fn an_api_key_is_not_warned_about_on_loopback_or_https() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text("fine")]);
    let mut command = turn(&ws, &mock);
    command.env("OPENAI_API_KEY", "sk-test").arg("hi");
    let out = util::run(command).expect(0);
    assert!(!out.stderr.contains("in the clear"), "{}", out.stderr);
}
