package mergeablemetrics;

import java.util.Arrays;

/**
 * {@code score_distribution} and {@code score_distribution_class0} (core/states/score_distribution.py
 * ScoreDistributionState, binning of core/states/score_bins.py): per bin of scores, the exact
 * weight of label 1 ({@code pos}) and of label 0 ({@code neg}). A score's key is its IEEE bits
 * made order-preserving ({@link #scoreKey}); the bin at level L is {@code key >> L}. The state is
 * canonical: its level is the smallest at which the distinct bins of the rows of positive weight
 * number at most {@code capacity} (exact at level 0, certified bounds beyond), so any
 * partitioning and merge order give the same bytes as core's fold.
 */
public final class ScoreDistribution implements JvmState {
    private static final long serialVersionUID = 1L;
    private static final long LOW63 = 0x7FFF_FFFF_FFFF_FFFFL;
    private static final int MAX_LEVEL = 63;
    private final FloatConfig cfg;
    private final String kind;
    private final int capacity;
    private int level;
    // bins (unordered while folding): key, unit-weight row counts, and exact sums of other weights
    private int m;
    private long[] keys = new long[8];
    private long[] cntNeg = new long[8], cntPos = new long[8];
    private ExactSum[] wNeg = new ExactSum[8], wPos = new ExactSum[8];
    // open-addressing index key -> bin + 1 (0: empty)
    private long[] hkeys = new long[16];
    private int[] hbins = new int[16];

    public ScoreDistribution(String kind, String config) {
        this.kind = kind;
        cfg = new FloatConfig(kind, config);
        capacity = cfg.integer("capacity");
        if (capacity < 2) throw new IllegalArgumentException(kind + ": capacity " + capacity + " < 2");
    }

    /** Order-preserving key of a finite score ({@code key(-0.0) == key(0.0) == 0}; core's score_keys). */
    static long scoreKey(double s) {
        long b = Double.doubleToRawLongBits(s);
        long sign = b >> 63;
        return ((sign & LOW63) ^ b) - sign;
    }

    private int find(long key) {
        int mask = hkeys.length - 1;
        int h = (int) (mix(key) & mask);
        while (hbins[h] != 0) {
            if (hkeys[h] == key) return hbins[h] - 1;
            h = (h + 1) & mask;
        }
        return -1 - h; // free slot
    }

    private static long mix(long k) {
        k ^= k >>> 33;
        k *= 0xff51afd7ed558ccdL;
        k ^= k >>> 33;
        return k;
    }

    private void rehash() {
        int size = 16;
        while (size < 2 * m + 2) size <<= 1;
        hkeys = new long[size];
        hbins = new int[size];
        for (int i = 0; i < m; i++) {
            int slot = -1 - find(keys[i]);
            hkeys[slot] = keys[i];
            hbins[slot] = i + 1;
        }
    }

    /** The bin of {@code key} (at the current level), created if missing. */
    private int bin(long key) {
        int f = find(key);
        if (f >= 0) return f;
        if (m == keys.length) {
            int n = 2 * m;
            keys = Arrays.copyOf(keys, n);
            cntNeg = Arrays.copyOf(cntNeg, n);
            cntPos = Arrays.copyOf(cntPos, n);
            wNeg = Arrays.copyOf(wNeg, n);
            wPos = Arrays.copyOf(wPos, n);
        }
        keys[m] = key;
        cntNeg[m] = cntPos[m] = 0;
        wNeg[m] = wPos[m] = null;
        m++;
        if (2 * m + 2 > hkeys.length) rehash();
        else {
            int slot = -1 - f;
            hkeys[slot] = key;
            hbins[slot] = m;
        }
        return m - 1;
    }

    @Override
    public void update(double label, double score, double weight) {
        FloatConfig.checkWeight(kind, weight);
        if (!Double.isFinite(score)) throw new IllegalArgumentException(kind + ": score " + score + " is not finite");
        if (label != 0 && label != 1) throw new IllegalArgumentException(kind + ": label " + label + " is not 0 or 1");
        if (weight == 0) return; // zero-weight rows leave no trace
        int b = bin(scoreKey(score) >> level);
        boolean pos = label == 1;
        if (weight == 1.0) {
            if (pos) cntPos[b]++;
            else cntNeg[b]++;
        } else {
            ExactSum[] w = pos ? wPos : wNeg;
            if (w[b] == null) w[b] = new ExactSum();
            w[b].add(weight);
        }
        if (m > capacity) raise(level);
    }

    /** Sorts the bins by key (and re-indexes them). */
    private void sort() {
        long[] sorted = Arrays.copyOf(keys, m); // distinct keys: the index finds each one's bin
        Arrays.sort(sorted);
        int[] idx = new int[m];
        for (int i = 0; i < m; i++) idx[i] = find(sorted[i]);
        long[] k = new long[Math.max(m, 8)], cn = new long[k.length], cp = new long[k.length];
        ExactSum[] wn = new ExactSum[k.length], wp = new ExactSum[k.length];
        for (int i = 0; i < m; i++) {
            int j = idx[i];
            k[i] = keys[j];
            cn[i] = cntNeg[j];
            cp[i] = cntPos[j];
            wn[i] = wNeg[j];
            wp[i] = wPos[j];
        }
        keys = k;
        cntNeg = cn;
        cntPos = cp;
        wNeg = wn;
        wPos = wp;
        rehash();
    }

    private static ExactSum add(ExactSum a, ExactSum b) {
        if (a == null) return b;
        if (b != null) a.merge(b);
        return a;
    }

    /** Coarsens the bins by {@code shift} levels (bins sorted, or sorts them). */
    private void coarsen(int shift) {
        sort();
        if (shift > 0) {
            int out = 0;
            for (int i = 0; i < m; i++) {
                long k = keys[i] >> shift;
                if (out > 0 && keys[out - 1] == k) {
                    cntNeg[out - 1] = Math.addExact(cntNeg[out - 1], cntNeg[i]);
                    cntPos[out - 1] = Math.addExact(cntPos[out - 1], cntPos[i]);
                    wNeg[out - 1] = add(wNeg[out - 1], wNeg[i]);
                    wPos[out - 1] = add(wPos[out - 1], wPos[i]);
                } else {
                    keys[out] = k;
                    cntNeg[out] = cntNeg[i];
                    cntPos[out] = cntPos[i];
                    wNeg[out] = wNeg[i];
                    wPos[out] = wPos[i];
                    out++;
                }
            }
            for (int i = out; i < m; i++) wNeg[i] = wPos[i] = null;
            m = out;
            level += shift;
        }
        rehash();
    }

    /** Raises the level (from {@code level}) to the smallest at which at most {@code capacity} bins remain (core's _canonical). */
    private void raise(int from) {
        sort();
        int[] perShift = new int[66];
        for (int i = 1; i < m; i++) {
            long x = keys[i - 1] ^ keys[i];
            perShift[64 - Long.numberOfLeadingZeros(x)]++; // the pair shares a bin from this shift on (64: never)
        }
        // bins at shift s: 1 + #{pairs whose split shift > s}
        int top = MAX_LEVEL - from;
        int shift = top;
        long above = 0;
        long[] binsAt = new long[66];
        for (int s = 64; s >= 0; s--) {
            binsAt[s] = 1 + above;
            above += perShift[s];
        }
        for (int s = 1; s <= top; s++) {
            if (binsAt[s] <= capacity) {
                shift = s;
                break;
            }
        }
        coarsen(shift);
    }

    @Override
    public void merge(JvmState other) {
        if (!(other instanceof ScoreDistribution) || !((ScoreDistribution) other).kind.equals(kind))
            throw new IllegalArgumentException("cannot merge " + other.getClass().getSimpleName() + " into " + kind);
        ScoreDistribution o = (ScoreDistribution) other;
        if (o.capacity != capacity) throw new IllegalArgumentException("cannot merge " + kind + " states: different capacity " + capacity + " != " + o.capacity);
        if (o.m == 0) return;
        if (o.level > level) coarsen(o.level - level);
        int shift = level - o.level;
        for (int i = 0; i < o.m; i++) {
            int b = bin(o.keys[i] >> shift);
            cntNeg[b] = Math.addExact(cntNeg[b], o.cntNeg[i]);
            cntPos[b] = Math.addExact(cntPos[b], o.cntPos[i]);
            if (o.wNeg[i] != null) wNeg[b] = add(wNeg[b] == null ? new ExactSum() : wNeg[b], o.wNeg[i]);
            if (o.wPos[i] != null) wPos[b] = add(wPos[b] == null ? new ExactSum() : wPos[b], o.wPos[i]);
        }
        if (m > capacity) raise(level);
    }

    private static ExactSum total(long count, ExactSum w) {
        ExactSum s = new ExactSum();
        s.add((double) (count >>> 26 << 26)); // exact: both parts have at most 38 and 26 bits
        s.add((double) (count & ((1L << 26) - 1)));
        if (w != null) s.merge(w);
        return s;
    }

    @Override
    public byte[] toBytes() {
        sort();
        ExactSum[] pos = new ExactSum[m], neg = new ExactSum[m];
        for (int i = 0; i < m; i++) {
            pos[i] = total(cntPos[i], wPos[i]);
            neg[i] = total(cntNeg[i], wNeg[i]);
        }
        ExactSum.Encoded p = ExactSum.encode(pos), n = ExactSum.encode(neg);
        long[] shape = {m};
        StateFrame f = new StateFrame(kind, 1, cfg.layoutJson);
        f.i64("level", new long[0], new long[] {level});
        f.i64("keys", shape, Arrays.copyOf(keys, m));
        f.exactValues("pos", shape, p);
        f.exactValues("neg", shape, n);
        f.exactLimbs("pos", p);
        f.exactLimbs("neg", n);
        return f.finish();
    }
}
