package rlockd.junit;

/** What {@link RlockdServer#pause} holds back (CLIENT PAUSE's mode). */
public enum PauseMode {
    /** Writes, scripts and PUBLISH wait; reads are answered. */
    WRITE,
    /** Every command waits. */
    ALL
}
