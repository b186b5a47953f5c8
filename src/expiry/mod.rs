//! Expiry: the timing wheel each shard files its deadlines in. The driver
//! that advances the wheels lives with the server (it is a task of it).

pub mod wheel;
