package mergeablemetrics;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/** Writer of core's state frames (core/states/codec.py, version 3): magic, version, kind, kind version,
 * layout JSON, then each stored field (name, dtype code, shape, little-endian raw values), then a CRC32. */
public final class Frame {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final int nFields;
    private int written;

    public Frame(String kind, int kindVersion, String layoutJson, int nFields) {
        out.writeBytes(new byte[] {'M', 'M', 'S', 3});
        str(kind, 2);
        out.write(kindVersion);
        str(layoutJson, 4);
        this.nFields = nFields;
        le(nFields, 2);
    }

    private void le(long v, int n) {
        for (int i = 0; i < n; i++) out.write((int) (v >>> (8 * i)) & 0xFF);
    }

    private void str(String s, int lenBytes) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        le(b.length, lenBytes);
        out.writeBytes(b);
    }

    private void header(String name, int code, long[] shape) {
        str(name, 2);
        out.write(code);
        out.write(shape.length);
        for (long d : shape) le(d, 8);
        written++;
    }

    public Frame doubles(String name, double[] values, long... shape) {
        header(name, 1, shape);
        for (double v : values) le(Double.doubleToRawLongBits(v), 8);
        return this;
    }

    public Frame longs(String name, long[] values, long... shape) {
        header(name, 2, shape);
        for (long v : values) le(v, 8);
        return this;
    }

    /** An exact-sum field whose sums are all exactly their float64 values (the compact form: exp 0, no limbs). */
    public Frame compactExact(String name, double[] values, long... shape) {
        return doubles(name, values, shape);
    }

    /** The limb fields of a compact exact sum ({@code <name>.exp} = 0, {@code <name>.limbs} empty). */
    public Frame compactLimbs(String name) {
        longs(name + ".exp", new long[] {0L});
        return longs(name + ".limbs", new long[0], 0L);
    }

    /** The limb fields of an exact-sum field in core's canonical form ({@link ExactSum#encode}). */
    public Frame exactLimbs(String name, ExactSum.Encoded e) {
        longs(name + ".exp", new long[] {e.exp});
        return longs(name + ".limbs", e.limbs, e.limbs.length);
    }

    public byte[] finish() {
        if (written != nFields) throw new IllegalStateException("frame: " + written + " fields written, " + nFields + " declared");
        byte[] body = out.toByteArray();
        CRC32 crc = new CRC32();
        crc.update(body);
        ByteBuffer b = ByteBuffer.allocate(body.length + 4).order(ByteOrder.LITTLE_ENDIAN);
        b.put(body).putInt((int) crc.getValue());
        return b.array();
    }
}
