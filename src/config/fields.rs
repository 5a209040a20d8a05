//! Serde adapters for the fields written as text (durations, sizes, addresses), so a bad value
//! fails with our own message under its key.

use super::values::{
    format_duration, format_size, normalize_public_url, parse_duration, parse_listen, parse_net,
    parse_opt_listen, parse_size,
};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serializer};
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// Marks messages from our own value parsers: they already say what is wrong and the key
/// pinpoints them, so unlike toml's own errors they get no line suffix.
pub(super) const VALUE_MARK: &str = "\u{1f}";

fn value_error<E: de::Error>(reason: String) -> E {
    E::custom(format!("{VALUE_MARK}{reason}"))
}

/// A string, or an integer so that `timeout = 10` gets the "unit is required" message instead of a type error.
enum TextOrInt {
    Text(String),
    Int(i64),
}

impl<'de> Deserialize<'de> for TextOrInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TextOrInt;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TextOrInt, E> {
                Ok(TextOrInt::Text(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<TextOrInt, E> {
                Ok(TextOrInt::Int(v))
            }
        }
        d.deserialize_any(V)
    }
}

pub(super) mod duration_field {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = match TextOrInt::deserialize(d)? {
            TextOrInt::Text(t) => t,
            TextOrInt::Int(i) => i.to_string(),
        };
        parse_duration(&text).map_err(value_error)
    }
}

pub(super) mod opt_duration_field {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => duration_field::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        duration_field::deserialize(d).map(Some)
    }
}

pub(super) mod size_field {
    use super::*;

    pub fn serialize<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_size(*n))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        match TextOrInt::deserialize(d)? {
            TextOrInt::Text(t) => parse_size(&t).map_err(value_error),
            TextOrInt::Int(i) => u64::try_from(i)
                .map_err(|_| value_error(format!("{i} is not a size (it is negative)"))),
        }
    }
}

pub(super) fn de_listen<'de, D: Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    parse_listen(&String::deserialize(d)?).map_err(value_error)
}

/// `[admin] listen`: an IP:port, or `""` for none.
pub(super) mod opt_listen_field {
    use super::*;

    pub fn serialize<S: Serializer>(a: &Option<SocketAddr>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&a.map(|a| a.to_string()).unwrap_or_default())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
        parse_opt_listen(&String::deserialize(d)?).map_err(value_error)
    }
}

pub(super) fn de_public_url<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(normalize_public_url(&String::deserialize(d)?))
}

/// `[server] trusted_proxies`: a list of addresses and CIDR ranges, the first bad one named.
pub(super) mod nets_field {
    use super::*;
    use ipnet::IpNet;

    pub fn serialize<S: Serializer>(nets: &[IpNet], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(nets.iter().map(IpNet::to_string))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<IpNet>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|n| parse_net(n))
            .collect::<Result<_, _>>()
            .map_err(value_error)
    }
}

/// Marks, after [`VALUE_MARK`], the end of a suffix our message adds to the key toml's span
/// gives: an array's entry (`[1]`) that the span, which covers the whole array, cannot name.
pub(super) const KEY_MARK: &str = "\u{1e}";

/// An error about one entry of an array value, named by its index.
fn entry_error<E: de::Error>(index: usize, reason: String) -> E {
    E::custom(format!("{VALUE_MARK}[{index}]{KEY_MARK}{reason}"))
}

/// `[[archives]] redirect_hosts`: each entry read into a [`RedirectHost`]; the first bad one
/// is named by its index (`archives[0].redirect_hosts[1]`).
pub(super) mod redirect_hosts_field {
    use super::*;
    use crate::config::RedirectHost;

    pub fn serialize<S: Serializer>(hosts: &[RedirectHost], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(hosts.iter().map(RedirectHost::to_string))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RedirectHost>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .enumerate()
            .map(|(j, h)| RedirectHost::parse(h).map_err(|r| entry_error(j, r)))
            .collect()
    }
}

/// An archive's `timegate`: a checked http(s) URL, refused under its key as the file is read.
pub(super) mod http_url_field {
    use super::*;
    use crate::config::HttpUrl;

    pub fn serialize<S: Serializer>(u: &HttpUrl, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(u.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<HttpUrl, D::Error> {
        HttpUrl::parse(&String::deserialize(d)?).map_err(value_error)
    }
}

/// An archive's `timemap` or `cdx`: a checked http(s) URL, or none when empty or absent (which
/// of the two an archive needs depends on its kind, which validation knows).
pub(super) mod opt_http_url_field {
    use super::*;
    use crate::config::HttpUrl;

    pub fn serialize<S: Serializer>(u: &Option<HttpUrl>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(u.as_ref().map_or("", HttpUrl::as_str))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<HttpUrl>, D::Error> {
        match String::deserialize(d)? {
            text if text.is_empty() => Ok(None),
            text => HttpUrl::parse(&text).map(Some).map_err(value_error),
        }
    }
}

/// `[sampling] allowed_urls`: each a checked http(s) URL; the first bad one is refused under
/// the list's key, quoting it.
pub(super) mod http_urls_field {
    use super::*;
    use crate::config::HttpUrl;

    pub fn serialize<S: Serializer>(urls: &[HttpUrl], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(urls.iter().map(HttpUrl::as_str))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<HttpUrl>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|u| HttpUrl::parse(u).map_err(|r| value_error(format!("{u:?}: {r}"))))
            .collect()
    }
}

/// `[[archives]] replay`: the checked template; empty or absent = none (a `kind = "cdx"`
/// archive without one is refused by validation, which knows the kind).
pub(super) mod replay_field {
    use super::*;
    use tmproxy_core::cdx::replay::Replay;

    pub fn serialize<S: Serializer>(r: &Option<Replay>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&r.as_ref().map(Replay::to_string).unwrap_or_default())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Replay>, D::Error> {
        let text = String::deserialize(d)?;
        if text.is_empty() {
            return Ok(None);
        }
        Replay::parse(&text).map(Some).map_err(value_error)
    }
}

/// `[[archives]] raw`: `true` (the `id_` rewrite), `false` (none) or a template, checked as
/// `replay` is; any other value is refused under the key.
pub(super) mod raw_field {
    use super::*;
    use tmproxy_core::cdx::replay::Replay;
    use tmproxy_core::raw_memento::RawForm;

    pub fn serialize<S: Serializer>(r: &RawForm, s: S) -> Result<S::Ok, S::Error> {
        match r {
            RawForm::Off => s.serialize_bool(false),
            RawForm::Id => s.serialize_bool(true),
            RawForm::Template(t) => s.serialize_str(&t.to_string()),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RawForm, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RawForm;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("true, false or a URL template with {timestamp} and {url}")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawForm, E> {
                Ok(if v { RawForm::Id } else { RawForm::Off })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawForm, E> {
                Replay::parse(v).map(RawForm::Template).map_err(value_error)
            }
        }
        d.deserialize_any(V)
    }
}

/// `[cache] shared`: the Redis address, or empty for off.
pub(super) mod shared_field {
    use super::*;
    use crate::config::SharedAddress;

    pub fn serialize<S: Serializer>(a: &Option<SharedAddress>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&a.as_ref().map(SharedAddress::text).unwrap_or_default())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SharedAddress>, D::Error> {
        SharedAddress::parse(&String::deserialize(d)?).map_err(value_error)
    }
}

/// The values `[cache] policy` accepts (the policies of docs/cache-policy.md). Here, beside the
/// field that names them in a refusal.
pub const CACHE_POLICIES: &[&str] = &["conditional", "merge", "unconditional", "forever", "none"];
/// The values `[cache] match` accepts.
pub const CACHE_MATCHES: &[&str] = &["loose", "strict"];

/// `[cache] policy`: one of [`CACHE_POLICIES`], named in the refusal.
pub(super) mod policy_field {
    use super::*;
    use tmproxy_core::policy::PolicyKind;

    pub fn serialize<S: Serializer>(p: &PolicyKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PolicyKind, D::Error> {
        parse(&String::deserialize(d)?).map_err(value_error)
    }

    /// The policy `text` names, or why it names none.
    pub fn parse(text: &str) -> Result<PolicyKind, String> {
        text.parse().map_err(|_| {
            format!(
                "{text:?} is not a policy: use {}",
                CACHE_POLICIES.join(", ")
            )
        })
    }
}

/// `[cache] ttl_mode`: one TTL for all entries, or each entry's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TtlModeName {
    #[default]
    Fixed,
    Adaptive,
}

impl TtlModeName {
    pub fn as_str(self) -> &'static str {
        match self {
            TtlModeName::Fixed => "fixed",
            TtlModeName::Adaptive => "adaptive",
        }
    }
}

/// The values `[cache] ttl_mode` accepts.
pub const CACHE_TTL_MODES: &[&str] = &["fixed", "adaptive"];

/// `[cache] ttl_mode`: `fixed` or `adaptive`, named in the refusal.
pub(super) mod ttl_mode_field {
    use super::*;

    pub fn serialize<S: Serializer>(m: &TtlModeName, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(m.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<TtlModeName, D::Error> {
        parse(&String::deserialize(d)?).map_err(value_error)
    }

    /// The mode `text` names, or why it names none.
    pub fn parse(text: &str) -> Result<TtlModeName, String> {
        match text {
            "fixed" => Ok(TtlModeName::Fixed),
            "adaptive" => Ok(TtlModeName::Adaptive),
            _ => Err(format!(
                "{text:?} is not a TTL mode: use {}",
                CACHE_TTL_MODES.join(" or ")
            )),
        }
    }
}

/// `[cache] match`: `loose` or `strict`.
pub(super) mod match_field {
    use super::*;
    use tmproxy_core::policy::Match;

    pub fn serialize<S: Serializer>(m: &Match, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(m.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Match, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map_err(|_| value_error(format!("{text:?} is not a match: use loose or strict")))
    }
}
