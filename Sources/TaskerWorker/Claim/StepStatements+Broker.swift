import TaskerPostgres

extension StepStatements {
    /// `claim` for a message that a broker (RabbitMQ) delivered: the same claim, nothing archived in
    /// PGMQ (the broker's delivery is acked after this commits). `archived` is true when the retire
    /// matched. $4 (the delivery tag) is read only to keep the parameters of `claim`.
    static let claimWithoutArchive = PreparedStatement(
        claim.sql.replacing(functionArchive, with: "($4::bigint IS NOT NULL OR true)"))

    /// `complete` without the PGMQ send: result, transition and `in_process = false` only; the
    /// orchestration message is published to the broker after this commits (`RabbitMQMessaging`).
    /// `msg_id` is 0 when the retire matched (NULL: not `in_progress` under the writer's claim, as
    /// with `complete`). $5 and $6 are read only to keep the parameters of `complete`.
    static let completeWithoutSend = PreparedStatement(
        complete.sql.replacing(functionSend, with: brokerSend))

    /// What replaces `functionSend` when a broker carries the result (also in crash recovery's statement).
    static let brokerSend = "CASE WHEN $5::text IS NULL OR $6::jsonb IS NULL THEN 0 ELSE 0 END::bigint"
}

extension StepQueueStatements {
    /// The step path with a broker carrying the messages: claims archive nothing and completions
    /// send nothing in PostgreSQL (`StepStatements.claimWithoutArchive`, `completeWithoutSend`).
    package static let broker = StepQueueStatements(
        claims: [:], completion: StepStatements.completeWithoutSend, defaultClaim: StepStatements.claimWithoutArchive)
}
