package mergeablemetrics;

import java.math.BigInteger;

/**
 * The finish of the regression metrics from a {@code regression_moments} state's bytes (single output), bit for
 * bit core's values (core/metrics/regression.py, core/metrics/calibration.py {@code MeanLabel},
 * {@code MeanPrediction}). Core computes each value from the state's exact sums with rational arithmetic
 * ({@code fractions.Fraction}) and rounds it once ({@code fraction_to_float}: Python's {@code int / int}, correctly
 * rounded half to even, {@code -0.0} for a negative value that underflows, +-inf past the float range). Here the
 * same rationals are built from the same limbs with {@link BigInteger} and rounded the same way, so the value is the
 * same double; the few float operations after the rounding ({@code math.sqrt}, {@code copysign}, {@code min},
 * {@code max}, numpy's average of one output) are IEEE operations Java does identically.
 *
 * <p>Description (see {@link Finish}): {@code reg,i,-1,0,metric,forceFinite,averaged}: {@code metric} one of
 * {@code mse rmse mae mape r2 ev me max pearson mean_y mean_p}; {@code forceFinite} 1/0 (r2, explained variance);
 * {@code averaged} 1 where core passes the value through {@code combine_outputs} (a {@code multioutput} metric:
 * {@code float(np.average([v]))}, which is {@code (0.0 + v) / 1}).
 */
final class RegressionFinish {
    private RegressionFinish() {}

    /** An exact rational {@code num / den}, {@code den > 0} (not reduced: only values are compared and rounded). */
    static final class Q {
        final BigInteger num, den;

        Q(BigInteger num, BigInteger den) {
            if (den.signum() < 0) {
                num = num.negate();
                den = den.negate();
            }
            this.num = num;
            this.den = den;
        }

        /** {@code m * 2**e}. */
        static Q dyadic(BigInteger m, long e) {
            return e >= 0 ? new Q(m.shiftLeft(Math.toIntExact(e)), BigInteger.ONE) : new Q(m, BigInteger.ONE.shiftLeft(Math.toIntExact(-e)));
        }

        /** The exact value of a finite double. */
        static Q of(double x) {
            long bits = Double.doubleToRawLongBits(x);
            int be = (int) ((bits >>> 52) & 0x7FF);
            long m = bits & ((1L << 52) - 1);
            int e;
            if (be == 0) {
                e = -1074;
            } else {
                m |= 1L << 52;
                e = be - 1075;
            }
            BigInteger big = BigInteger.valueOf(bits < 0 ? -m : m);
            return dyadic(big, e);
        }

        static Q integer(long v) {
            return new Q(BigInteger.valueOf(v), BigInteger.ONE);
        }

        Q add(Q o) {
            if (den.equals(o.den)) return new Q(num.add(o.num), den);
            return new Q(num.multiply(o.den).add(o.num.multiply(den)), den.multiply(o.den));
        }

        Q sub(Q o) {
            return add(new Q(o.num.negate(), o.den));
        }

        Q mul(Q o) {
            return new Q(num.multiply(o.num), den.multiply(o.den));
        }

        /** {@code this / o} ({@code o} nonzero). */
        Q div(Q o) {
            if (o.num.signum() == 0) throw new ArithmeticException("division by an exact zero");
            return new Q(num.multiply(o.den), den.multiply(o.num));
        }

        int signum() {
            return num.signum();
        }

        /** Correctly rounded (half to even) to a double, as Python's {@code int / int}: +0.0 for an exact zero,
         * -0.0 for a negative value that underflows, +-inf past the float range. */
        double toDouble() {
            int sign = num.signum();
            if (sign == 0) return 0.0;
            BigInteger a = num.abs(), b = den;
            long e = (long) a.bitLength() - b.bitLength();
            // t = floor(log2(a / b)): a / b lies in [2**(e-1), 2**(e+1))
            boolean atLeast = (e >= 0 ? a.compareTo(b.shiftLeft((int) e)) : a.shiftLeft((int) -e).compareTo(b)) >= 0;
            long t = atLeast ? e : e - 1;
            if (t > 1023) return sign > 0 ? Double.POSITIVE_INFINITY : Double.NEGATIVE_INFINITY;
            long lsb = Math.max(t - 52, -1074); // the exponent of the result's last bit
            BigInteger n = a, d = b;
            if (lsb < 0) n = n.shiftLeft((int) -lsb);
            else d = d.shiftLeft((int) lsb);
            BigInteger[] qr = n.divideAndRemainder(d);
            BigInteger q = qr[0];
            int cmp = qr[1].shiftLeft(1).compareTo(d);
            if (cmp > 0 || (cmp == 0 && q.testBit(0))) q = q.add(BigInteger.ONE);
            double v = Math.scalb((double) q.longValueExact(), (int) lsb); // q <= 2**53: exact (inf at 2**1024)
            return sign < 0 ? -v : v;
        }
    }

    /** The exact value of an exact-sum field ({@code <name>.limbs} and {@code .exp}; a compact one is its double). */
    static Q field(StateReader.State st, String name) {
        long[] limbs = st.longs(name + ".limbs");
        if (limbs.length == 0) return Q.of(st.doubles(name)[0]);
        long exp = st.longs(name + ".exp")[0];
        BigInteger s = BigInteger.ZERO;
        for (int i = limbs.length - 1; i >= 0; i--) s = s.shiftLeft(32).add(BigInteger.valueOf(limbs[i]));
        return Q.dyadic(s, 32L * exp);
    }

    /** core's {@code RegressionMomentsState.fr}: a sum field, or {@code sum_e}, {@code sum_ee} derived exactly. */
    static Q fr(StateReader.State st, String name) {
        if (name.equals("sum_e")) return fr(st, "sum_p").sub(fr(st, "sum_y"));
        if (name.equals("sum_ee")) return fr(st, "sum_pp").sub(Q.integer(2).mul(fr(st, "sum_yp"))).add(fr(st, "sum_yy"));
        return field(st, name);
    }

    /** core's {@code centred(a, b)}: {@code sum w a b - sum w a * sum w b / W}. */
    static Q centred(StateReader.State st, char a, char b) {
        String order = "ype";
        char lo = order.indexOf(a) <= order.indexOf(b) ? a : b, hi = lo == a ? b : a;
        Q prod = fr(st, "sum_" + lo + hi);
        return prod.sub(fr(st, "sum_" + a).mul(fr(st, "sum_" + b)).div(fr(st, "weight")));
    }

    /** core's {@code _Explained.ratio}: {@code 1 - num / den} rounded once, or the {@code force_finite} value. */
    static double ratio(Q num, Q den, boolean forceFinite) {
        if (den.signum() != 0 && num.signum() != 0) return Q.integer(1).sub(num.div(den)).toDouble();
        if (forceFinite) return num.signum() == 0 ? 1.0 : 0.0;
        if (den.signum() == 0 && num.signum() == 0) return Double.NaN;
        return den.signum() != 0 ? Q.integer(1).sub(num.div(den)).toDouble() : Double.NEGATIVE_INFINITY;
    }

    static double mean(StateReader.State st, String name) {
        return fr(st, name).div(fr(st, "weight")).toDouble();
    }

    /** The value of {@code metric} (a {@code reg} description's fields 4..6) of one state (null: no rows). */
    static double value(StateReader.State st, String metric, boolean forceFinite, boolean averaged) {
        double v = st == null || st.doubles("weight")[0] == 0 ? Double.NaN : raw(st, metric, forceFinite);
        return averaged ? (0.0 + v) / 1.0 : v;
    }

    private static double raw(StateReader.State st, String metric, boolean forceFinite) {
        switch (metric) {
            case "mse":
                return fr(st, "sum_ee").div(fr(st, "weight")).toDouble();
            case "rmse":
                return Math.sqrt(fr(st, "sum_ee").div(fr(st, "weight")).toDouble());
            case "mae":
                return mean(st, "sum_abs_e");
            case "mape":
                return mean(st, "sum_ape");
            case "me":
                return mean(st, "sum_e");
            case "mean_y":
                return mean(st, "sum_y");
            case "mean_p":
                return mean(st, "sum_p");
            case "max":
                return st.doubles("max_abs_e")[0];
            case "r2":
                if (st.longs("count")[0] < 2) return Double.NaN;
                return ratio(fr(st, "sum_ee"), centred(st, 'y', 'y'), forceFinite);
            case "ev":
                return ratio(centred(st, 'e', 'e'), centred(st, 'y', 'y'), forceFinite);
            case "pearson": {
                Q den = centred(st, 'y', 'y').mul(centred(st, 'p', 'p'));
                if (den.signum() <= 0) return Double.NaN;
                Q c = centred(st, 'y', 'p');
                // math.copysign(math.sqrt(float(c * c / den)), c): the sign of float(c), that of c (+ for 0)
                double r = Math.sqrt(c.mul(c).div(den).toDouble());
                r = c.signum() < 0 ? -Math.abs(r) : Math.abs(r);
                double m = r < 1.0 ? r : 1.0; // Python's min(1.0, r)
                return m > -1.0 ? m : -1.0; // max(-1.0, m)
            }
            default:
                throw new IllegalArgumentException("unknown regression metric " + metric);
        }
    }
}
