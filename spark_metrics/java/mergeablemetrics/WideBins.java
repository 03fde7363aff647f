package mergeablemetrics;

import java.util.Arrays;

/**
 * One column's canonical score bins with {@code width} weights per bin (core/states/score_bins.py with
 * {@code num_labels = width}): the binning of {@link ScoreDistribution} (the same order-preserving keys,
 * {@code key >> level} bins, and the smallest level at which at most {@code capacity} distinct bins remain),
 * with one weight per label value instead of {@code pos} / {@code neg}. Unit weights are counted in int64,
 * other weights summed exactly ({@link ExactSum}), so any partitioning and merge order give the same bins.
 * Used by {@link ClassScoreDistribution} (one per class column).
 */
final class WideBins implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private static final int MAX_LEVEL = 63;
    final int width;
    final int capacity;
    int level;
    int m;
    long[] keys = new long[8];
    long[] counts; // m * width, row-major
    ExactSum[] sums; // m * width (null: no weight other than 1 yet)
    private long[] hkeys = new long[16];
    private int[] hbins = new int[16];

    WideBins(int width, int capacity) {
        this.width = width;
        this.capacity = capacity;
        counts = new long[8 * width];
        sums = new ExactSum[8 * width];
    }

    private int find(long key) {
        int mask = hkeys.length - 1;
        long k = key;
        k ^= k >>> 33;
        k *= 0xff51afd7ed558ccdL;
        k ^= k >>> 33;
        int h = (int) (k & mask);
        while (hbins[h] != 0) {
            if (hkeys[h] == key) return hbins[h] - 1;
            h = (h + 1) & mask;
        }
        return -1 - h;
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

    private int bin(long key) {
        int f = find(key);
        if (f >= 0) return f;
        if (m == keys.length) {
            keys = Arrays.copyOf(keys, 2 * m);
            counts = Arrays.copyOf(counts, 2 * m * width);
            sums = Arrays.copyOf(sums, 2 * m * width);
        }
        keys[m] = key;
        m++;
        if (2 * m + 2 > hkeys.length) rehash();
        else {
            hkeys[-1 - f] = key;
            hbins[-1 - f] = m;
        }
        return m - 1;
    }

    /** Adds one row of weight {@code w > 0} and label {@code label} (in [0, width)) at its score's key (level 0). */
    void add(long scoreKey, int label, double w) {
        int b = bin(scoreKey >> level) * width + label;
        if (w == 1.0) counts[b]++;
        else {
            if (sums[b] == null) sums[b] = new ExactSum();
            sums[b].add(w);
        }
        if (m > capacity) raise();
    }

    private void sort() {
        long[] sorted = Arrays.copyOf(keys, m);
        Arrays.sort(sorted);
        long[] k = new long[Math.max(m, 8)], c = new long[k.length * width];
        ExactSum[] s = new ExactSum[k.length * width];
        for (int i = 0; i < m; i++) {
            int j = find(sorted[i]);
            k[i] = sorted[i];
            System.arraycopy(counts, j * width, c, i * width, width);
            System.arraycopy(sums, j * width, s, i * width, width);
        }
        keys = k;
        counts = c;
        sums = s;
        rehash();
    }

    private static ExactSum add(ExactSum a, ExactSum b) {
        if (b == null) return a;
        if (a == null) {
            a = new ExactSum();
        }
        a.merge(b);
        return a;
    }

    /** Sorts the bins, then coarsens them by {@code shift} levels. */
    private void coarsen(int shift) {
        sort();
        if (shift > 0) {
            int out = 0;
            for (int i = 0; i < m; i++) {
                long k = keys[i] >> shift;
                int to;
                if (out > 0 && keys[out - 1] == k) to = out - 1;
                else {
                    to = out++;
                    keys[to] = k;
                    if (to != i) {
                        System.arraycopy(counts, i * width, counts, to * width, width);
                        System.arraycopy(sums, i * width, sums, to * width, width);
                    }
                    continue;
                }
                for (int j = 0; j < width; j++) {
                    counts[to * width + j] = Math.addExact(counts[to * width + j], counts[i * width + j]);
                    sums[to * width + j] = add(sums[to * width + j], sums[i * width + j]);
                }
            }
            Arrays.fill(sums, out * width, m * width, null);
            Arrays.fill(counts, out * width, m * width, 0L);
            m = out;
            level += shift;
        }
        rehash();
    }

    /** Raises the level to the smallest at which at most {@code capacity} bins remain (core's _canonical). */
    private void raise() {
        sort();
        int[] perShift = new int[66];
        for (int i = 1; i < m; i++) perShift[64 - Long.numberOfLeadingZeros(keys[i - 1] ^ keys[i])]++;
        int top = MAX_LEVEL - level;
        long[] binsAt = new long[66];
        long above = 0;
        for (int s = 64; s >= 0; s--) {
            binsAt[s] = 1 + above;
            above += perShift[s];
        }
        int shift = top;
        for (int s = 1; s <= top; s++) {
            if (binsAt[s] <= capacity) {
                shift = s;
                break;
            }
        }
        coarsen(shift);
    }

    void merge(WideBins o) {
        if (o.m == 0) return;
        if (o.level > level) coarsen(o.level - level);
        int shift = level - o.level;
        for (int i = 0; i < o.m; i++) {
            int b = bin(o.keys[i] >> shift) * width;
            for (int j = 0; j < width; j++) {
                counts[b + j] = Math.addExact(counts[b + j], o.counts[i * width + j]);
                ExactSum os = o.sums[i * width + j];
                if (os != null) sums[b + j] = add(sums[b + j], os);
            }
        }
        if (m > capacity) raise();
    }

    /** The exact total of cell {@code c} (unit-weight count plus the other weights). */
    ExactSum total(int c) {
        ExactSum s = new ExactSum();
        long count = counts[c];
        s.add((double) (count >>> 26 << 26)); // exact: both parts have at most 38 and 26 bits
        s.add((double) (count & ((1L << 26) - 1)));
        if (sums[c] != null) s.merge(sums[c]);
        return s;
    }

    /** Sorts the bins (ascending keys) for writing. */
    void sorted() {
        sort();
    }
}
