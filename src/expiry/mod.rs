//! Expiry: the timing wheel each shard files its deadlines in, and the
//! alarm that tells the driver when to look. The driver that advances the
//! wheels lives with the server (it is a task of it).

pub mod alarm;
pub mod wheel;
