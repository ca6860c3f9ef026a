//! Blocking avoidance off: a wrapper that lets strategies schedule threads onto blocking operations (Concuerror §VI-A).
