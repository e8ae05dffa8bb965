//! Small statistics over integer samples.

/// The arithmetic mean, or None for an empty sample.
pub fn mean(values: &[i64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(values.iter().sum::<i64>() as f64 / values.len() as f64)
}

/// The median: the middle value of the sorted sample, or the mean of the two middle values
/// when the sample has an even length. None for an empty sample.
pub fn median(values: &[i64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort();
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 0 {
        Some((sorted[mid] + sorted[mid + 1]) as f64 / 2.0)
    } else {
        Some(sorted[mid] as f64)
    }
}
