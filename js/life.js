// What ties the objects an instance makes to the instance and to the module's memory.
//
// The key under which every object an instance makes (its modules and caches) holds the instance's life token:
// the instance is released by garbage collection only once its API object and all of them are gone (js/api.js).
export const LIFE = Symbol('xattn instance');

// Symbol.dispose where the engine has it (Node 20 does); the well-known fallback name elsewhere.
export const DISPOSE = Symbol.dispose ?? Symbol.for('Symbol.dispose');

// For the objects an instance makes that own a handle in its module (MultiheadAttention modules, KV caches,
// encoder layers): own(state, object, releaseFirst?) gives `object`, made over `state` ({ handle, disposed, … }),
// its dispose() and [Symbol.dispose] and the instance's life token, and registers it so that garbage collection
// frees the handle of an object dropped without dispose(). Returns `object`. dispose() is idempotent, and runs
// releaseFirst, when given, before it frees the handle (what else the object holds in the module, such as an
// encoder layer's kept forwards, each with a registration of its own); after a module failure, or once the
// instance is disposed, the handle's memory is gone with the module and freeing it does nothing.
export function handleOwner(boundary, life) {
  const registry = new FinalizationRegistry((handle) => boundary.destroy(handle));
  return function own(state, object, releaseFirst) {
    function dispose() {
      if (state.disposed) return;
      state.disposed = true;
      registry.unregister(object);
      releaseFirst?.();
      boundary.destroy(state.handle);
    }
    // The instance lives as long as any object it made.
    Object.assign(object, { dispose, [DISPOSE]: dispose, [LIFE]: life });
    registry.register(object, state.handle, object);
    return object;
  };
}
