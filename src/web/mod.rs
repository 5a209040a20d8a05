//! What the server renders for people: the web pages (home, a URI-R's timeline, admin, errors)
//! as askama templates filled from the aggregate, the embedded stylesheet and script, and what
//! `/archives`, `/about` and the home page say about each archive. No HTTP here: the routes in
//! `crate::http` read requests and send these.

pub mod archives;
pub mod assets;
pub mod pages;
pub mod timeline;
