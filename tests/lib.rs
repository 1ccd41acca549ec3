//! Support code for arbor's integration tests lives in `suite/`; this library is empty.
