// A handler package imports this one module: the handler API (TaskerHandlerSDK) comes with it.
@_exported import TaskerHandlerSDK
