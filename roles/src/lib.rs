//! Agent roles: the built-ins (`default`, `explorer`, `worker`, `guardian`), TOML role files
//! and the narrowing rules that keep a role from widening what its parent has.
