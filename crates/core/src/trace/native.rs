//! The native `.cst` trace format (stub).
