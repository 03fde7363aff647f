package mergeablemetrics;

public interface JvmState extends java.io.Serializable {
    void update(double label, double score, double weight);      // one row; the Spark wrapper skips/refuses nulls per the Python rules
    default void updateVector(double label, double[] scores, double weight) { throw new UnsupportedOperationException("vector scores"); }
    void merge(JvmState other);                                    // same configuration only (else IllegalArgumentException naming the setting)
    byte[] toBytes();                                              // exactly the bytes core's codec (core/states/codec.py) encodes for the equal Python state
}
