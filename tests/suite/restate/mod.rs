//! The Restate engine, end to end: a real `restate-server` on loopback ports with its own data
//! directory, two `arbor worker` processes sharing one address (one deployment), and
//! `arbor exec --engine restate` driving a scripted tree through the ingress, and the commands
//! that act on it from outside (approvals, mail, follow-ups, resume).

mod approvals;
mod cluster;
mod driver;
mod export;
mod fanout;
mod guardian;
mod interrupt;
mod outside;
mod patch;
mod providers;
mod reuse;
mod rules;
mod server;
mod up;
