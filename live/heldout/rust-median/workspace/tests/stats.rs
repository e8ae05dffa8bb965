use stats::{mean, median};

#[test]
fn mean_of_three() {
    assert_eq!(mean(&[1, 2, 6]), Some(3.0));
}

#[test]
fn median_odd() {
    assert_eq!(median(&[5, 1, 3]), Some(3.0));
}

#[test]
fn median_even() {
    assert_eq!(median(&[4, 1, 3, 2]), Some(2.5));
}

#[test]
fn empty() {
    assert_eq!(mean(&[]), None);
    assert_eq!(median(&[]), None);
}
