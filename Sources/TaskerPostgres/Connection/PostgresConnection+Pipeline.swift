import CLibPQ

/// One statement of a pipeline.
public enum PipelineStatement: Sendable {
    /// A statement without parameters, sent unnamed (e.g. `BEGIN`, `COMMIT`).
    case plain(String)
    /// A prepared statement with its parameters (prepared in the same round trip at its first use;
    /// unnamed through a transaction pooler, see `PostgresRoute`).
    case prepared(PreparedStatement, [any PostgresEncodable])
}

extension PostgresConnection {
    /// Sends every statement at once and reads all the results back: ONE network round trip for the
    /// lot (libpq pipeline mode), instead of one per statement. Returns one result per statement.
    ///
    /// The statements run in order, as they would one by one. After the first error the server skips
    /// the rest of the pipeline; if that left a transaction block open (`BEGIN` sent, `COMMIT`
    /// skipped), it is rolled back, and the first error is thrown. Use `BEGIN`/`COMMIT` in the list
    /// when the statements must commit together.
    @discardableResult
    public func pipeline(_ statements: [PipelineStatement]) throws(PostgresError) -> [PostgresQueryResult] {
        do {
            return try runStatement { () throws(PostgresError) in try runPipeline(statements) }
        } catch {
            var error = error
            error.backendPID = backendPID
            if error.kind == .server, error.sqlState == nil, !isConnected {
                error.kind = .connectionClosed  // libpq's own report of a connection that broke
            }
            throw error
        }
    }

    private func runPipeline(_ statements: [PipelineStatement]) throws(PostgresError) -> [PostgresQueryResult] {
        let conn = try liveHandle()
        guard PQenterPipelineMode(conn) == 1 else {
            throw PostgresError(.usage, "cannot enter pipeline mode: \(Self.errorMessage(conn))")
        }
        enum Expected {
            case prepare(String)
            case statement(String)
        }
        var expected: [Expected] = []
        var preparing: Set<String> = []
        var sent = true
        for statement in statements where sent {
            switch statement {
            case .plain(let sql):
                sent = PQsendQueryParams(conn, sql, 0, nil, nil, nil, nil, 0) == 1
                expected.append(.statement(sql))
            case .prepared(let prepared, let parameters) where !route.preparesStatements:
                // Through a transaction pooler: unnamed, with its parameters' types, every time.
                let types = parameters.map { $0.postgresType }
                let texts = parameters.map { $0.postgresText }
                sent = CStringArray.withOptional(texts) { valuePtrs in
                    types.withUnsafeBufferPointer { typePtr in
                        PQsendQueryParams(conn, prepared.sql, Int32(parameters.count), typePtr.baseAddress, valuePtrs, nil, nil, 0) == 1
                    }
                }
                expected.append(.statement(prepared.sql))
            case .prepared(let prepared, let parameters):
                if !self.prepared.contains(prepared.name), preparing.insert(prepared.name).inserted {
                    let types = parameters.map { $0.postgresType }
                    sent = types.withUnsafeBufferPointer { typePtr in
                        PQsendPrepare(conn, prepared.name, prepared.sql, Int32(types.count), typePtr.baseAddress) == 1
                    }
                    expected.append(.prepare(prepared.name))
                    guard sent else { break }
                }
                let texts = parameters.map { $0.postgresText }
                sent = CStringArray.withOptional(texts) { valuePtrs in
                    PQsendQueryPrepared(conn, prepared.name, Int32(parameters.count), valuePtrs, nil, nil, 0) == 1
                }
                expected.append(.statement(prepared.sql))
            }
        }
        guard sent, PQpipelineSync(conn) == 1 else {
            try abandonPipeline(conn)
        }
        var results: [PostgresQueryResult] = []
        results.reserveCapacity(statements.count)
        var firstError: PostgresError?
        for item in expected {
            guard let result = try nextResult(conn) else { try abandonPipeline(conn) }
            let status = PQresultStatus(result)
            switch (item, status) {
            case (.prepare(let name), PGRES_COMMAND_OK):
                prepared.insert(name)
            case (.statement, PGRES_TUPLES_OK), (.statement, PGRES_COMMAND_OK), (.statement, PGRES_EMPTY_QUERY):
                results.append(Self.copyRows(result))
            case (_, PGRES_PIPELINE_ABORTED):
                break  // skipped after an earlier error
            case (.prepare(let sql), _), (.statement(let sql), _):
                firstError = firstError ?? Self.serverError(result, sql: sql)
            }
            PQclear(result)
            // Each statement's results end with a null result.
            while let extra = try nextResult(conn) { PQclear(extra) }
        }
        guard let sync = try nextResult(conn) else { try abandonPipeline(conn) }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        guard synced, PQexitPipelineMode(conn) == 1 else { try abandonPipeline(conn) }
        publishState()
        if let firstError {
            if firstError.invalidatesPreparedStatements {
                closeHandle()  // see `invalidatesPreparedStatements`: the pool opens a fresh session
            } else if PQtransactionStatus(conn) == PQTRANS_INERROR {
                rollbackQuietly()
            }
            throw firstError
        }
        return results
    }

    /// The connection broke in the middle of a pipeline: it cannot be trusted any more.
    private func abandonPipeline(_ conn: OpaquePointer) throws(PostgresError) -> Never {
        let message = Self.errorMessage(conn)
        closeHandle()
        throw PostgresError(.connectionClosed, "pipeline failed: \(message)")
    }
}
