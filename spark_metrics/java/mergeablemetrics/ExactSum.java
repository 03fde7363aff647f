package mergeablemetrics;

import java.math.BigInteger;

/**
 * One exact, order-independent sum of float64 values and products (the JVM port of core's
 * {@code _util/exact.py}). The sum is a fixed-point integer held in signed 32-bit limbs:
 * {@code sum_i d[i] * 2**(32 * (lo + i))}; integer addition is associative and commutative, so
 * any order of adds and merges gives the same sum. {@link #encode} writes an array of sums in
 * core's canonical form (compact float64 values when every sum is exact, else the shared
 * smallest limb window), so the bytes equal the Python {@code ExactSums} of the same sums.
 */
public final class ExactSum implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private static final long MASK = 0xFFFFFFFFL;
    /** adds between two carry passes: every limb takes < 2**34 per add, so it stays below 2**62 */
    private static final int CARRY_EVERY = 1 << 27;

    private long[] d = new long[0];
    private int lo;
    private int pending;

    /** Adds a finite double (IllegalArgumentException for NaN or +-inf). */
    public void add(double x) {
        long bits = Double.doubleToRawLongBits(x);
        int e = (int) ((bits >>> 52) & 0x7FF);
        if (e == 0x7FF) throw new IllegalArgumentException("exact sum: value " + x + " is not finite");
        long m = bits & ((1L << 52) - 1);
        if (e != 0) m |= 1L << 52;
        if (m == 0) return;
        addMagnitude(0L, m, bits < 0, Math.max(e, 1) - 1075);
    }

    /** Adds a non-negative int64 count exactly (two exact doubles: its high and low 32 bits). */
    public void addCount(long c) {
        if (c < 0) throw new IllegalArgumentException("exact sum: negative count " + c);
        add((double) (c >>> 32) * 4294967296.0);
        add((double) (c & MASK));
    }

    /** Adds {@code a * b} exactly. */
    public void addProduct(double a, double b) {
        long ba = Double.doubleToRawLongBits(a), bb = Double.doubleToRawLongBits(b);
        long ma = mant(ba, a), mb = mant(bb, b);
        if (ma == 0 || mb == 0) return;
        addMagnitude(Math.multiplyHigh(ma, mb), ma * mb, (ba ^ bb) < 0, expo(ba) + expo(bb));
    }

    /** Adds {@code a * b * c} exactly. */
    public void addProduct(double a, double b, double c) {
        long ba = Double.doubleToRawLongBits(a), bb = Double.doubleToRawLongBits(b), bc = Double.doubleToRawLongBits(c);
        long ma = mant(ba, a), mb = mant(bb, b), mc = mant(bc, c);
        if (ma == 0 || mb == 0 || mc == 0) return;
        long hi = Math.multiplyHigh(ma, mb), lo64 = ma * mb; // < 2**106
        long ph = (hi << 11) | (lo64 >>> 53), pl = lo64 & ((1L << 53) - 1); // P = ph * 2**53 + pl, both < 2**53
        boolean neg = ((ba ^ bb ^ bc) < 0);
        int E = expo(ba) + expo(bb) + expo(bc);
        if (ph != 0) addMagnitude(Math.multiplyHigh(ph, mc), ph * mc, neg, E + 53);
        if (pl != 0) addMagnitude(Math.multiplyHigh(pl, mc), pl * mc, neg, E);
    }

    private static long mant(long bits, double x) {
        int e = (int) ((bits >>> 52) & 0x7FF);
        if (e == 0x7FF) throw new IllegalArgumentException("exact sum: value " + x + " is not finite");
        long m = bits & ((1L << 52) - 1);
        return e != 0 ? m | (1L << 52) : m;
    }

    private static int expo(long bits) {
        return Math.max((int) ((bits >>> 52) & 0x7FF), 1) - 1075;
    }

    /** Adds {@code +-(hi * 2**64 + lo) * 2**E} ({@code hi}, {@code lo} an unsigned 128-bit magnitude). */
    private void addMagnitude(long hi, long lo64, boolean neg, int E) {
        int q = E >> 5, r = E & 31;
        int n = (hi >>> 32) != 0 ? 4 : hi != 0 ? 3 : (lo64 >>> 32) != 0 ? 2 : 1;
        if (q < lo || q + n + 1 >= lo + d.length) ensure(q, q + n + 1);
        int at = q - lo;
        long sign = neg ? -1 : 1;
        long v = (lo64 & MASK) << r; // each chunk << r < 2**63: its low and high 32 bits go to two limbs
        d[at] += sign * (v & MASK);
        d[at + 1] += sign * (v >>> 32);
        if (n > 1) {
            v = (lo64 >>> 32) << r;
            d[at + 1] += sign * (v & MASK);
            d[at + 2] += sign * (v >>> 32);
        }
        if (n > 2) {
            v = (hi & MASK) << r;
            d[at + 2] += sign * (v & MASK);
            d[at + 3] += sign * (v >>> 32);
        }
        if (n > 3) {
            v = (hi >>> 32) << r;
            d[at + 3] += sign * (v & MASK);
            d[at + 4] += sign * (v >>> 32);
        }
        if (++pending >= CARRY_EVERY) carry();
    }

    /** Makes limbs {@code from..to} (global indices, inclusive) part of the window, with one spare limb on top. */
    private void ensure(int from, int to) {
        if (d.length == 0) {
            d = new long[to - from + 2];
            lo = from;
            return;
        }
        int hiIdx = lo + d.length - 1;
        if (from >= lo && to < hiIdx) return;
        int nlo = Math.min(lo, from), nhi = Math.max(hiIdx, to + 1);
        long[] nd = new long[nhi - nlo + 1];
        System.arraycopy(d, 0, nd, lo - nlo, d.length);
        d = nd;
        lo = nlo;
    }

    /** Carries so every limb but the top is in [0, 2**32) and the top one in [-2**31, 2**31). */
    private void carry() {
        pending = 0;
        if (d.length == 0) return;
        for (int i = 0; i < d.length - 1; i++) {
            long c = d[i] >> 32;
            d[i] &= MASK;
            d[i + 1] += c;
        }
        long top = d[d.length - 1];
        if (top < -(1L << 31) || top >= (1L << 31)) {
            ensure(lo, lo + d.length); // one more limb
            carry();
        }
    }

    /** Adds another exact sum into this one. */
    public void merge(ExactSum o) {
        if (o.d.length == 0) return;
        o.carry();
        carry();
        ensure(o.lo, o.lo + o.d.length);
        int at = o.lo - lo;
        for (int i = 0; i < o.d.length; i++) d[at + i] += o.d[i];
        carry();
    }

    /** The exact sum as an integer times 2**(32 * lo). */
    BigInteger bigValue() {
        carry();
        BigInteger s = BigInteger.ZERO;
        for (int i = d.length - 1; i >= 0; i--) s = s.shiftLeft(32).add(BigInteger.valueOf(d[i]));
        return s;
    }

    /** Correctly rounded (half to even) double of {@code s * 2**k}; {@code inexact[0]} tells whether it is not exact (or +-inf). */
    static double round(BigInteger s, long k, boolean[] inexact) {
        int sign = s.signum();
        if (sign == 0) {
            inexact[0] = false;
            return 0.0;
        }
        BigInteger mag = s.abs();
        long n = mag.bitLength();
        long top = n - 1 + k; // exponent of the leading bit
        if (top > 1100) {
            inexact[0] = true;
            return sign > 0 ? Double.POSITIVE_INFINITY : Double.NEGATIVE_INFINITY;
        }
        long drop = Math.max(n - 53, -1074 - k);
        double v;
        if (drop <= 0) {
            v = Math.scalb((double) mag.longValueExact(), (int) k);
            inexact[0] = false;
        } else if (drop > n + 1) {
            v = 0.0;
            inexact[0] = true;
        } else {
            int dr = (int) drop;
            BigInteger q = mag.shiftRight(dr);
            BigInteger rem = mag.subtract(q.shiftLeft(dr));
            BigInteger half = BigInteger.ONE.shiftLeft(dr - 1);
            int cmp = rem.compareTo(half);
            if (cmp > 0 || (cmp == 0 && q.testBit(0))) q = q.add(BigInteger.ONE);
            inexact[0] = rem.signum() != 0;
            v = Math.scalb((double) q.longValueExact(), (int) (k + dr));
        }
        if (Double.isInfinite(v)) inexact[0] = true;
        return sign < 0 ? -v : v;
    }

    /** The correctly rounded double of this sum. */
    public double value() {
        boolean[] ix = new boolean[1];
        return round(bigValue(), 32L * lo, ix);
    }

    /** Core's stored form of an array of sums: {@code values} (m), {@code exp} and the flat (m, L) {@code limbs}. */
    public static final class Encoded {
        public final double[] values;
        public final long exp;
        public final long[] limbs;

        Encoded(double[] values, long exp, long[] limbs) {
            this.values = values;
            this.exp = exp;
            this.limbs = limbs;
        }
    }

    /** Canonical form of {@code sums} as core's {@code ExactSums.from_limbs} gives it. */
    public static Encoded encode(ExactSum[] sums) {
        int m = sums.length;
        double[] values = new double[m];
        BigInteger[] big = new BigInteger[m];
        boolean any = false;
        boolean[] ix = new boolean[1];
        for (int g = 0; g < m; g++) {
            big[g] = sums[g].bigValue();
            values[g] = round(big[g], 32L * sums[g].lo, ix);
            any |= ix[0];
        }
        if (!any) {
            for (int g = 0; g < m; g++) values[g] += 0.0; // -0.0 -> +0.0
            return new Encoded(values, 0, new long[0]);
        }
        // the smallest shared window: lowest nonzero limb, highest limb a signed top needs
        long wlo = Long.MAX_VALUE, whi = Long.MIN_VALUE;
        for (int g = 0; g < m; g++) {
            BigInteger s = big[g];
            if (s.signum() == 0) continue;
            long base = 32L * sums[g].lo; // s * 2**base is the sum in bits
            long low = base + s.getLowestSetBit();
            wlo = Math.min(wlo, Math.floorDiv(low, 32));
            long bits = s.bitLength() + 1 + base; // two's complement width incl. sign, from bit 0 of 2**0
            whi = Math.max(whi, Math.floorDiv(bits - 1, 32));
        }
        int L = (int) (whi - wlo + 1);
        long[] limbs = new long[m * L];
        for (int g = 0; g < m; g++) {
            BigInteger s = big[g];
            if (s.signum() == 0) continue;
            long shift = 32L * sums[g].lo - 32L * wlo; // >= 0
            BigInteger t = s.shiftLeft((int) shift);
            for (int i = 0; i < L; i++) {
                long limb = t.shiftRight(32 * i).longValue() & MASK;
                if (i == L - 1) limb = (int) limb; // signed top limb
                limbs[g * L + i] = limb;
            }
        }
        return new Encoded(values, wlo, limbs);
    }
}
