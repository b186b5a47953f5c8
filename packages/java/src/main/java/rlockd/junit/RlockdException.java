package rlockd.junit;

/** rlockd could not be found, started or driven as asked. */
public class RlockdException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public RlockdException(String message) {
        super(message);
    }

    public RlockdException(String message, Throwable cause) {
        super(message, cause);
    }
}
