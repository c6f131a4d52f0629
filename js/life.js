// The key under which every object an instance makes (its modules and caches) holds the instance's life token:
// the instance is released by garbage collection only once its API object and all of them are gone (js/api.js).
export const LIFE = Symbol('xattn instance');
