//! Who a request is made for: the client's address as the connection found it (through
//! `[server] trusted_proxies`), and that address made readable by the routes that need it.

mod address;
mod scope;

pub use address::{ClientAddr, TrustedProxies};
pub use scope::{client_of, current, scoped, ClientScopeLayer};
