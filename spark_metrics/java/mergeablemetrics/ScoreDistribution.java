package mergeablemetrics;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.Arrays;

/**
 * {@code score_distribution} and {@code score_distribution_class0} (core/states/score_distribution.py
 * ScoreDistributionState, binning of core/states/score_bins.py): per bin of scores, the exact
 * weight of label 1 ({@code pos}) and of label 0 ({@code neg}). A score's key is its IEEE bits
 * made order-preserving ({@link #scoreKey}); the bin at level L is {@code key >> L}. The state is
 * canonical: its level is the smallest at which the distinct bins of the rows of positive weight
 * number at most {@code capacity} (exact at level 0, certified bounds beyond), so any
 * partitioning and merge order give the same bytes as core's fold.
 *
 * <p>The fold is a primitive-array hash fold (issue 26, round 7): a row costs one open-addressing probe
 * (key and bin side by side in one {@code long[]}) and one {@code long} increment (unit weights; other weights
 * an exact sum per bin and label, allocated only when a row has one). The level is raised lazily: the bins may
 * grow to {@code 2 * capacity} before {@link #raise} brings them to the smallest level at which at most
 * {@code capacity} remain, and {@link #toBytes} raises once more. A subset of the rows never needs a higher
 * level than the whole, and coarsening adds exact sums, so the bytes are those of raising on every new bin
 * (the canonical state), without a sort of every bin each time one more bin appears beyond the capacity
 * (which made a state of one to two capacities of distinct scores fold at about 1 microsecond per row).
 * Java serialisation (Spark's partial aggregation buffers) writes the used bins only, not the hash index.
 */
public final class ScoreDistribution implements JvmState {
    private static final long serialVersionUID = 2L;
    private static final long LOW63 = 0x7FFF_FFFF_FFFF_FFFFL;
    private static final int MAX_LEVEL = 63;
    private final FloatConfig cfg;
    private final String kind;
    private final int capacity;
    /** raise the level once the bins exceed this (lazily: {@code 2 * capacity}) */
    private final long limit;
    private int level;
    private int m;
    // bins (unordered while folding, see `sorted`): key; unit-weight row counts, cnt[2b] label 0 and cnt[2b + 1]
    // label 1; exact sums of other weights, w[2b] and w[2b + 1] (w null while every row weighed 1)
    private transient long[] keys;
    private transient long[] cnt;
    private transient ExactSum[] w;
    private transient boolean sorted;
    // open-addressing index: slot h holds its key at 2h and its bin + 1 at 2h + 1 (0: empty)
    private transient long[] slots;

    public ScoreDistribution(String kind, String config) {
        this.kind = kind;
        cfg = new FloatConfig(kind, config);
        capacity = cfg.integer("capacity");
        if (capacity < 2) throw new IllegalArgumentException(kind + ": capacity " + capacity + " < 2");
        limit = 2L * capacity;
        allocate(8);
        sorted = true;
    }

    private void allocate(int bins) {
        keys = new long[bins];
        cnt = new long[2 * bins];
        w = null;
        slots = new long[32];
    }

    /** Order-preserving key of a finite score ({@code key(-0.0) == key(0.0) == 0}; core's score_keys). */
    static long scoreKey(double s) {
        long b = Double.doubleToRawLongBits(s);
        long sign = b >> 63;
        return ((sign & LOW63) ^ b) - sign;
    }

    private static long mix(long k) {
        k ^= k >>> 33;
        k *= 0xff51afd7ed558ccdL;
        k ^= k >>> 33;
        return k;
    }

    /** The bin of {@code key} at the current level, or {@code -1 - slot} (the free slot where it goes). */
    private int find(long key) {
        long[] t = slots;
        int mask = (t.length >>> 1) - 1;
        int h = (int) mix(key) & mask;
        while (true) {
            long bin = t[2 * h + 1];
            if (bin == 0) return -1 - h;
            if (t[2 * h] == key) return (int) bin - 1;
            h = (h + 1) & mask;
        }
    }

    private void rehash() {
        int size = 16;
        while (size < 2 * m + 2) size <<= 1;
        long[] t = new long[2 * size];
        int mask = size - 1;
        for (int i = 0; i < m; i++) {
            int h = (int) mix(keys[i]) & mask;
            while (t[2 * h + 1] != 0) h = (h + 1) & mask;
            t[2 * h] = keys[i];
            t[2 * h + 1] = i + 1;
        }
        slots = t;
    }

    private void grow(int bins) {
        if (bins <= keys.length) return;
        int n = Math.max(bins, 2 * keys.length);
        keys = Arrays.copyOf(keys, n);
        cnt = Arrays.copyOf(cnt, 2 * n);
        if (w != null) w = Arrays.copyOf(w, 2 * n);
    }

    /** The bin of {@code key} (at the current level), created if missing. */
    private int bin(long key) {
        int f = find(key);
        if (f >= 0) return f;
        if (m == keys.length) grow(m + 1);
        keys[m] = key;
        cnt[2 * m] = cnt[2 * m + 1] = 0;
        if (w != null) w[2 * m] = w[2 * m + 1] = null;
        if (m > 0 && keys[m - 1] >= key) sorted = false;
        m++;
        if (2 * m + 2 > (slots.length >>> 1)) rehash();
        else {
            int h = -1 - f;
            slots[2 * h] = key;
            slots[2 * h + 1] = m;
        }
        return m - 1;
    }

    private ExactSum weightSum(int j) {
        if (w == null) w = new ExactSum[cnt.length];
        ExactSum s = w[j];
        if (s == null) w[j] = s = new ExactSum();
        return s;
    }

    @Override
    public void update(double label, double score, double weight) {
        FloatConfig.checkWeight(kind, weight);
        if (!Double.isFinite(score)) throw new IllegalArgumentException(kind + ": score " + score + " is not finite");
        if (label != 0 && label != 1) throw new IllegalArgumentException(kind + ": label " + label + " is not 0 or 1");
        if (weight == 0) return; // zero-weight rows leave no trace
        int j = 2 * bin(scoreKey(score) >> level) + (label == 1 ? 1 : 0);
        if (weight == 1.0) cnt[j]++;
        else weightSum(j).add(weight);
        if (m > limit) raise(level);
    }

    /** Sorts the bins by key (and re-indexes them). */
    private void sort() {
        if (sorted) return;
        long[] sortedKeys = Arrays.copyOf(keys, m); // distinct keys: the index finds each one's bin
        Arrays.sort(sortedKeys);
        int n = Math.max(m, 8);
        long[] c = new long[2 * n];
        ExactSum[] ws = w == null ? null : new ExactSum[2 * n];
        for (int i = 0; i < m; i++) {
            int j = find(sortedKeys[i]);
            c[2 * i] = cnt[2 * j];
            c[2 * i + 1] = cnt[2 * j + 1];
            if (ws != null) {
                ws[2 * i] = w[2 * j];
                ws[2 * i + 1] = w[2 * j + 1];
            }
        }
        keys = m < 8 ? Arrays.copyOf(sortedKeys, 8) : sortedKeys;
        cnt = c;
        w = ws;
        sorted = true;
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
        if (shift <= 0) return;
        int out = 0;
        for (int i = 0; i < m; i++) {
            long k = keys[i] >> shift;
            if (out > 0 && keys[out - 1] == k) {
                cnt[2 * out - 2] = Math.addExact(cnt[2 * out - 2], cnt[2 * i]);
                cnt[2 * out - 1] = Math.addExact(cnt[2 * out - 1], cnt[2 * i + 1]);
                if (w != null) {
                    w[2 * out - 2] = add(w[2 * out - 2], w[2 * i]);
                    w[2 * out - 1] = add(w[2 * out - 1], w[2 * i + 1]);
                }
            } else {
                keys[out] = k;
                cnt[2 * out] = cnt[2 * i];
                cnt[2 * out + 1] = cnt[2 * i + 1];
                if (w != null) {
                    w[2 * out] = w[2 * i];
                    w[2 * out + 1] = w[2 * i + 1];
                }
                out++;
            }
        }
        if (w != null) Arrays.fill(w, 2 * out, 2 * m, null);
        m = out;
        level += shift;
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
            cnt[2 * b] = Math.addExact(cnt[2 * b], o.cnt[2 * i]);
            cnt[2 * b + 1] = Math.addExact(cnt[2 * b + 1], o.cnt[2 * i + 1]);
            if (o.w != null) {
                if (o.w[2 * i] != null) weightSum(2 * b).merge(o.w[2 * i]);
                if (o.w[2 * i + 1] != null) weightSum(2 * b + 1).merge(o.w[2 * i + 1]);
            }
        }
        if (m > limit) raise(level);
    }

    private static ExactSum total(long count, ExactSum w) {
        ExactSum s = new ExactSum();
        s.add((double) (count >>> 26 << 26)); // exact: both parts have at most 38 and 26 bits
        s.add((double) (count & ((1L << 26) - 1)));
        if (w != null) s.merge(w);
        return s;
    }

    /** The encoded exact sums of label {@code side} (0, 1) per bin. */
    private ExactSum.Encoded sums(int side) {
        if (w == null) {
            // unit weights only: each sum is its count, exact as a double below 2**53, so core's canonical form is
            // the values alone (what encoding an exact sum per bin gives, without one per bin)
            double[] values = new double[m];
            boolean exact = true;
            for (int i = 0; i < m; i++) {
                long c = cnt[2 * i + side];
                exact &= c <= (1L << 53);
                values[i] = (double) c;
            }
            if (exact) return new ExactSum.Encoded(values, 0, new long[0]);
        }
        ExactSum[] s = new ExactSum[m];
        for (int i = 0; i < m; i++) s[i] = total(cnt[2 * i + side], w == null ? null : w[2 * i + side]);
        return ExactSum.encode(s);
    }

    @Override
    public byte[] toBytes() {
        if (m > capacity) raise(level); // the lazy raise (see the class comment)
        sort();
        ExactSum.Encoded p = sums(1), n = sums(0);
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

    /** The used bins only, at the canonical level (not the arrays' spare room nor the hash index, rebuilt on
     * reading). */
    private void writeObject(ObjectOutputStream out) throws IOException {
        if (m > capacity) raise(level); // the canonical state: at most `capacity` bins to write (and to merge)
        out.defaultWriteObject(); // cfg, kind, capacity, limit, level, m
        for (int i = 0; i < m; i++) out.writeLong(keys[i]);
        for (int i = 0; i < 2 * m; i++) out.writeLong(cnt[i]);
        int weighted = 0;
        if (w != null) for (int i = 0; i < 2 * m; i++) if (w[i] != null) weighted++;
        out.writeInt(weighted);
        if (weighted > 0) {
            for (int i = 0; i < 2 * m; i++) {
                if (w[i] != null) {
                    out.writeInt(i);
                    out.writeObject(w[i]);
                }
            }
        }
    }

    private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
        in.defaultReadObject();
        int n = Math.max(m, 8);
        keys = new long[n];
        cnt = new long[2 * n];
        for (int i = 0; i < m; i++) keys[i] = in.readLong();
        for (int i = 0; i < 2 * m; i++) cnt[i] = in.readLong();
        int weighted = in.readInt();
        if (weighted > 0) {
            w = new ExactSum[2 * n];
            for (int k = 0; k < weighted; k++) {
                int i = in.readInt();
                w[i] = (ExactSum) in.readObject();
            }
        }
        sorted = isSorted();
        rehash();
    }

    private boolean isSorted() {
        for (int i = 1; i < m; i++) if (keys[i - 1] >= keys[i]) return false;
        return true;
    }
}
