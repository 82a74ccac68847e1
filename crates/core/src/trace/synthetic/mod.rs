//! Seeded synthetic access generators (stub).
pub mod chase;
pub mod mix;
pub mod phases;
pub mod stream;
pub mod uniform;
pub mod zipf;
