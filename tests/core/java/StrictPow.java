import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;

/** Reads pairs of big-endian doubles (x, y) on stdin; writes StrictMath.pow(x, y) of each pair (big-endian). */
public final class StrictPow {
    public static void main(String[] args) throws Exception {
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(System.out, 1 << 16));
        while (true) {
            double x, y;
            try {
                x = in.readDouble();
                y = in.readDouble();
            } catch (EOFException e) {
                break;
            }
            out.writeDouble(StrictMath.pow(x, y));
        }
        out.flush();
    }
}
