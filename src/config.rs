//! TEMPORARY stub with the agreed API; replaced by the real config module.
use std::net::SocketAddr;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub server: ServerConfig,
    pub upstream: UpstreamConfig,
    pub archives: Vec<ArchiveConfig>,
}
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub public_url: String,
}
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamConfig {
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub deadline: Duration,
    pub max_body: u64,
    pub max_pages: usize,
    pub user_agent: String,
    pub failures_before_dormant: u32,
    pub dormant_for: Duration,
}
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveConfig {
    pub id: String,
    pub name: String,
    pub timemap: String,
    pub timegate: String,
    pub timeout: Option<Duration>,
    pub enabled: bool,
}
impl Default for Config {
    fn default() -> Self {
        Config {
            server: ServerConfig {
                listen: SocketAddr::from(([127, 0, 0, 1], 7089)),
                public_url: String::new(),
            },
            upstream: UpstreamConfig {
                connect_timeout: Duration::from_secs(3),
                timeout: Duration::from_secs(10),
                deadline: Duration::from_secs(15),
                max_body: 128 << 20,
                max_pages: 10,
                user_agent: "tmproxy/0.1 (Memento aggregator)".into(),
                failures_before_dormant: 5,
                dormant_for: Duration::from_secs(300),
            },
            archives: vec![],
        }
    }
}
impl Config {
    pub fn public_url(&self) -> String {
        if self.server.public_url.is_empty() {
            format!("http://{}", self.server.listen)
        } else {
            self.server.public_url.trim_end_matches('/').to_string()
        }
    }
    pub fn archive_timeout(&self, a: &ArchiveConfig) -> Duration {
        a.timeout.unwrap_or(self.upstream.timeout)
    }
}
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = s.bytes().take_while(u8::is_ascii_digit).count();
    let n: u64 = s[..d]
        .parse()
        .map_err(|_| format!("{s:?} is not a duration"))?;
    match &s[d..] {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        _ => Err(format!("{s:?} is not a duration")),
    }
}
impl Config {
    pub fn load(_explicit: Option<&std::path::Path>) -> Result<(Config, String), String> {
        Ok((Config::default(), "built-in defaults".into()))
    }
}
