/**
 * Egress policy for connection targets (config: EGRESS_ALLOW_PRIVATE, EGRESS_ALLOW_LOOPBACK). Link-local and
 * cloud metadata addresses are always refused; private ranges and loopback are allowed by default for
 * self-hosting and can be refused.
 */
export interface EgressPolicy {
  allowPrivate: boolean;
  allowLoopback: boolean;
}

export const DEFAULT_EGRESS_POLICY: EgressPolicy = Object.freeze({ allowPrivate: true, allowLoopback: true });
