//! The Restate engine, end to end: a real `restate-server` on loopback ports with its own data
//! directory, two `arbor worker` processes sharing one address (one deployment), and
//! `arbor exec --engine restate` driving a scripted tree through the ingress.

mod cluster;
mod fanout;
mod interrupt;
mod rules;
mod server;
mod up;
