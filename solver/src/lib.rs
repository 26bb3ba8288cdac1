//! The retrograde builder (issue in progress).
