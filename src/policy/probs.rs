//! Probability-vector kernels over a legal-action mask, generic over `f32` (network outputs)
//! and `f64` (exact bookkeeping), so actors, learners and exact references share one
//! implementation.

use num_traits::Float;

/// Regret matching on one row (Eq. 1 of the ARMAC paper): the positive parts of `row`
/// normalised over the legal actions; uniform over the legal actions when none is positive;
/// `0` at illegal actions whatever `row` holds there. Non-finite entries (NaN, ±∞) count as
/// non-positive. All zeros when no action is legal.
///
/// # Panics
/// If `row` and `legal` differ in length.
pub fn normalized_relu<T: Float>(row: &[T], legal: &[bool]) -> Vec<T> {
    let mut out = vec![T::zero(); row.len()];
    normalized_relu_into(row, legal, &mut out);
    out
}

/// [`normalized_relu`] into a caller's buffer of the same length.
///
/// # Panics
/// If the three slices differ in length.
pub fn normalized_relu_into<T: Float>(row: &[T], legal: &[bool], out: &mut [T]) {
    assert_eq!(
        row.len(),
        legal.len(),
        "row and legal mask differ in length"
    );
    assert_eq!(row.len(), out.len(), "row and output differ in length");
    let positive = |x: T, l: bool| {
        if l && x > T::zero() && x.is_finite() {
            x
        } else {
            T::zero()
        }
    };
    let total = row
        .iter()
        .zip(legal)
        .fold(T::zero(), |s, (&x, &l)| s + positive(x, l));
    if total > T::zero() && total.is_finite() {
        for ((o, &x), &l) in out.iter_mut().zip(row).zip(legal) {
            *o = positive(x, l) / total;
        }
    } else {
        uniform_into(legal, out);
    }
}

/// The uniform distribution over the legal actions (all zeros if none is legal).
fn uniform_into<T: Float>(legal: &[bool], out: &mut [T]) {
    let n = legal.iter().filter(|&&l| l).count();
    let u = if n > 0 {
        T::one() / T::from(n).expect("a count fits any float")
    } else {
        T::zero()
    };
    for (o, &l) in out.iter_mut().zip(legal) {
        *o = if l { u } else { T::zero() };
    }
}

/// ε-uniform mixing over the legal actions: `(1 − ε) π(a) + ε / |legal|` on legal actions, 0 on
/// illegal ones. `policy` is first restricted to the legal actions and renormalised (uniform if
/// it has no mass there), so the result is always a distribution over the legal actions (all
/// zeros if none is legal).
///
/// # Panics
/// If `ε ∉ [0, 1]` or the slices differ in length.
pub fn mix_epsilon<T: Float + std::fmt::Display>(policy: &[T], legal: &[bool], eps: T) -> Vec<T> {
    assert!(
        eps >= T::zero() && eps <= T::one(),
        "ε must be in [0, 1], got {eps}"
    );
    assert_eq!(
        policy.len(),
        legal.len(),
        "policy and legal mask differ in length"
    );
    let mut uniform = vec![T::zero(); legal.len()];
    uniform_into(legal, &mut uniform);
    let mass = policy
        .iter()
        .zip(legal)
        .filter(|(p, l)| **l && **p > T::zero())
        .fold(T::zero(), |s, (&p, _)| s + p);
    policy
        .iter()
        .zip(legal)
        .zip(&uniform)
        .map(|((&p, &l), &u)| {
            if !l {
                T::zero()
            } else {
                let base = if mass > T::zero() {
                    p.max(T::zero()) / mass
                } else {
                    u
                };
                (T::one() - eps) * base + eps * u
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approx(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn normalized_relu_f64_cases() {
        let t = [true, true, true];
        assert_eq!(
            normalized_relu(&[1.0, 3.0, -2.0], &t),
            vec![0.25, 0.75, 0.0]
        );
        assert_eq!(normalized_relu(&[-1.0, 0.0, -2.0], &t), vec![1.0 / 3.0; 3]);
        // Illegal actions get zero whatever W says; uniform is over legal actions only.
        let m = [true, false, true];
        assert_eq!(normalized_relu(&[2.0, 100.0, 2.0], &m), vec![0.5, 0.0, 0.5]);
        assert_eq!(
            normalized_relu(&[-2.0, 100.0, 0.0], &m),
            vec![0.5, 0.0, 0.5]
        );
        assert_eq!(
            normalized_relu(&[f64::NAN, f64::NAN, 1.0], &m),
            vec![0.0, 0.0, 1.0]
        );
        assert_eq!(
            normalized_relu(&[1.0, 1.0], &[false, false]),
            vec![0.0, 0.0]
        );
        assert!(normalized_relu::<f64>(&[], &[]).is_empty());
    }

    #[test]
    fn normalized_relu_f32_cases() {
        let l = [true, true, false, true];
        assert_eq!(
            normalized_relu(&[1.0, 3.0, 100.0, -2.0], &l),
            vec![0.25, 0.75, 0.0, 0.0]
        );
        let third = 1.0 / 3.0;
        assert_eq!(
            normalized_relu(&[-1.0, 0.0, 5.0, -3.0], &l),
            vec![third, third, 0.0, third]
        );
        assert_eq!(
            normalized_relu(&[f32::NAN, 2.0, 1.0, f32::INFINITY], &l),
            vec![0.0, 1.0, 0.0, 0.0]
        );
        assert_eq!(
            normalized_relu(&[1.0, 2.0], &[false, false]),
            vec![0.0, 0.0]
        );
    }

    #[test]
    fn mix_epsilon_cases() {
        let legal = [true, false, true, true];
        let pi = [0.5, 0.0, 0.5, 0.0];
        assert!(approx(&mix_epsilon(&pi, &legal, 0.0), &pi));
        let third = 1.0 / 3.0;
        let m = mix_epsilon(&pi, &legal, 0.05);
        assert!(approx(
            &m,
            &[
                0.95 * 0.5 + 0.05 * third,
                0.0,
                0.95 * 0.5 + 0.05 * third,
                0.05 * third
            ]
        ));
        assert!((m.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(approx(
            &mix_epsilon(&pi, &legal, 1.0),
            &[third, 0.0, third, third]
        ));
        // Mass on illegal actions is dropped and the rest renormalised; no mass → uniform.
        assert!(approx(
            &mix_epsilon(&[0.25, 0.5, 0.25, 0.0], &legal, 0.0),
            &[0.5, 0.0, 0.5, 0.0]
        ));
        assert!(approx(
            &mix_epsilon(&[0.0, 1.0, 0.0, 0.0], &legal, 0.0),
            &[third, 0.0, third, third]
        ));
        assert_eq!(mix_epsilon(&[1.0], &[false], 0.5), vec![0.0]);
    }

    #[test]
    #[should_panic(expected = "ε must be in [0, 1]")]
    fn mix_epsilon_rejects_bad_eps() {
        mix_epsilon(&[1.0], &[true], -0.1);
    }
}
